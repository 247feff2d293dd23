// For tests/lit/cli/validate.test: a matmul whose outputs exceed FP16's
// 65504 (6e4 times a row sum of a normal input), then a softmax.
func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x8xf32> {mp.name = "probs"}) {
  %w = mp.constant dense<6.0e+04> : tensor<8x8xf32> loc("big.weight")
  %h = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("scores")
  %p = mp.softmax %h {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32> loc("probs")
  return %p : tensor<4x8xf32>
}
