// RUN: mixprec-opt --mp-fuse --mp-lower-to-kernels %s | mixprec-translate --mpk-to-cuda | FileCheck %s
func.func @gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf16> {
  %0 = mp.gelu %x : tensor<4x8xf32> loc("act")
  %1 = mp.cast %0 : tensor<4x8xf32> -> tensor<4x8xf16> loc("tohalf")
  return %1 : tensor<4x8xf16>
}
