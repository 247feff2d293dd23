// RUN: mixprec-opt --mp-fuse --mp-lower-to-kernels %s | mixprec-translate --mpk-to-cuda | FileCheck %s
func.func @q(%x: tensor<4x8xbf16>, %s: tensor<f32>) -> (tensor<4x8xf8E4M3FN>, tensor<f32>) {
  %0 = mp.cast %x : tensor<4x8xbf16> -> tensor<4x8xf32> loc("widen")
  %1 = mp.amax %0 : tensor<4x8xf32> -> tensor<f32> loc("amax")
  %2 = mp.quantize %0, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf8E4M3FN> loc("q")
  return %2, %1 : tensor<4x8xf8E4M3FN>, tensor<f32>
}
