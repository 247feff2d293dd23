// RUN: mixprec-opt --mp-fuse --mp-lower-to-kernels %s | mixprec-translate --mpk-to-cuda | FileCheck %s
func.func @sm(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = mp.softmax %x {axis = 1 : i64} : tensor<4x8xbf16> -> tensor<4x8xbf16> loc("sm")
  return %0 : tensor<4x8xbf16>
}
