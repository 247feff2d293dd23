// For tests/lit/cli/validate.test: a matmul whose outputs (about 1e-9)
// flush to zero in FP16 (its smallest subnormal is 6e-8), then a gain
// back to order 1: finite, but every output is 0.
func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x8xf32> {mp.name = "y"}) {
  %w = mp.constant dense<1.0e-09> : tensor<8x8xf32> loc("tiny.weight")
  %h = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("scores")
  %k = mp.constant dense<1.0e+09> : tensor<4x8xf32> loc("gain")
  %g = mp.mul %h, %k : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("scale")
  return %g : tensor<4x8xf32>
}
