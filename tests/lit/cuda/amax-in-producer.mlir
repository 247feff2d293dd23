// RUN: mixprec-translate --mpk-to-cuda %s | FileCheck %s
// A kernel that produces a tensor and its amax: the amax is accumulated per
// thread, reduced per block and combined with one atomicMax per block, so
// the launch zeroes that result first.
func.func @producer(%x: tensor<4x8xbf16>, %s: tensor<f32>) -> (tensor<4x8xf8E4M3FN>, tensor<f32>) {
  %0:2 = mpk.kernel(%x, %s) {ops = ["act"], row_dims = 0 : i64, shape = array<i64: 4, 8>} : (tensor<4x8xbf16>, tensor<f32>) -> (tensor<4x8xf8E4M3FN>, tensor<f32>) {
  ^bb0(%a: tensor<4x8xbf16>, %b: tensor<f32>):
    %1 = mpk.elementwise gelu_tanh %a : (tensor<4x8xbf16>) -> tensor<4x8xf32>
    %2 = mpk.amax %1 : tensor<4x8xf32> -> tensor<f32>
    %3 = mp.quantize %1, %b : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf8E4M3FN>
    mpk.yield %3, %2 : tensor<4x8xf8E4M3FN>, tensor<f32>
  }
  return %0#0, %0#1 : tensor<4x8xf8E4M3FN>, tensor<f32>
}
