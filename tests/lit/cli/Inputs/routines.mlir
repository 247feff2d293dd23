// Data movement routines for the CUDA routine kernels (tests/lit/cli/cuda.test):
// a transpose, a slice, a gather with constant indices and one with
// indices given at run time.
func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}, %ids: tensor<2xi64> {mp.name = "ids"})
    -> (tensor<2x4xf32> {mp.name = "picked"}, tensor<2x4xf32> {mp.name = "looked_up"}) {
  %t = mp.transpose %x {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32> loc("flip")
  %s = mp.slice %t {starts = array<i64: 7, 0>, steps = array<i64: -2, 1>} : tensor<8x4xf32> -> tensor<4x4xf32> loc("rows")
  %c = mp.constant dense<[3, -4]> : tensor<2xi64> loc("fixed_ids")
  %g = mp.gather %s, %c {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("pick")
  %h = mp.gather %s, %ids {axis = 0 : i64} : (tensor<4x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("lookup")
  return %g, %h : tensor<2x4xf32>, tensor<2x4xf32>
}
