// For tests/lit/cli/empty-reduction.test: reductions over an empty axis
// (x[2,3,4] sliced to [2,3,0]) give their identity.
func.func @main(%x: tensor<2x3x4xf32> {mp.name = "x"}) -> (tensor<2x3xf32> {mp.name = "sum"}, tensor<2x3xf32> {mp.name = "max"}, tensor<2x3xf32> {mp.name = "mean"}) {
  %e = mp.slice %x {starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : tensor<2x3x4xf32> -> tensor<2x3x0xf32> loc("cut")
  %s = mp.reduce_sum %e {axes = array<i64: 2>, keepdims = false} : tensor<2x3x0xf32> -> tensor<2x3xf32> loc("sum")
  %m = mp.reduce_max %e {axes = array<i64: 2>, keepdims = false} : tensor<2x3x0xf32> -> tensor<2x3xf32> loc("max")
  %a = mp.reduce_mean %e {axes = array<i64: 2>, keepdims = false} : tensor<2x3x0xf32> -> tensor<2x3xf32> loc("mean")
  return %s, %m, %a : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
