// For tests/lit/cli/module.test: a size-1 leading dim, where every
// broadcast stride (an FP8 amax's store, a bias) must be 0. k = n = 16, so
// the FP8 policy gives the linear layer an FP8 GEMM.
func.func @main(%x: tensor<1x4x16xf32> {mp.name = "x"}) -> (tensor<1x4x16xf32> {mp.name = "y"}) {
  %w = mp.constant dense<0.25> : tensor<16x16xf32> loc("w")
  %b = mp.constant dense<0.5> : tensor<16xf32> loc("b")
  %h = mp.linear %x, %w, %b {transpose_weight = true} : (tensor<1x4x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<1x4x16xf32> loc("fc")
  %y = mp.softmax %h {axis = 2 : i64} : tensor<1x4x16xf32> -> tensor<1x4x16xf32> loc("sm")
  return %y : tensor<1x4x16xf32>
}
