// For tests/lit/cli/scalar-kernel.test: sqrt of a rank-0 constant is a
// kernel over a rank-0 space with no inputs, whose Store has no strides.
func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x8xf32> {mp.name = "y"}) {
  %c = mp.constant dense<4.0> : tensor<f32> loc("c")
  %s = mp.sqrt %c : tensor<f32> loc("sq")
  %y = mp.add %x, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32> loc("add")
  return %y : tensor<4x8xf32>
}
