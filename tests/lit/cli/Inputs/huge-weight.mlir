// For tests/lit/cli/validate.test: a weight above FP16's 65504, whose FP16
// copy (folded at compile time) would be infinite; the activations stay small.
func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x8xf32> {mp.name = "y"}) {
  %w = mp.constant dense<1.0e+05> : tensor<8x8xf32> loc("huge.weight")
  %s = mp.constant dense<1.0e-05> : tensor<f32> loc("scale")
  %h = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm")
  %y = mp.mul %h, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32> loc("scaled")
  return %y : tensor<4x8xf32>
}
