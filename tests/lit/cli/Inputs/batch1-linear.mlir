// For tests/lit/cli/module.test: a size-1 leading dim, where every
// broadcast stride (an FP8 amax's store, a bias) must be 0.
func.func @main(%x: tensor<1x4x8xf32> {mp.name = "x"}) -> (tensor<1x4x8xf32> {mp.name = "y"}) {
  %w = mp.constant dense<0.25> : tensor<8x8xf32> loc("w")
  %b = mp.constant dense<0.5> : tensor<8xf32> loc("b")
  %h = mp.linear %x, %w, %b {transpose_weight = true} : (tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32> loc("fc")
  %y = mp.softmax %h {axis = 2 : i64} : tensor<1x4x8xf32> -> tensor<1x4x8xf32> loc("sm")
  return %y : tensor<1x4x8xf32>
}
