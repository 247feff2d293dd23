// For tests/lit/cli/conv-tf32.test: a convolution alone, so that the module
// and the interpreter run the same reference kernel on the same operands.
func.func @main(%x: tensor<1x3x6x6xf32> {mp.name = "x"}) -> (tensor<1x4x6x6xf32> {mp.name = "y"}) {
  %w = mp.constant dense<[[[[0.1234567, -0.7654321, 0.3333333], [0.2718281, 0.1414213, -0.5772156], [0.6931471, -0.4142135, 0.8660254]]], [[[-0.1234567, 0.7654321, -0.3333333], [0.9876543, -0.1111111, 0.2222222], [0.4444444, 0.5555555, -0.6666666]]], [[[0.7777777, -0.8888888, 0.9999999], [0.1010101, 0.2020202, -0.3030303], [0.4040404, -0.5050505, 0.6060606]]], [[[0.7070707, 0.8080808, -0.9090909], [-0.1212121, 0.2323232, 0.3434343], [0.4545454, -0.5656565, 0.6767676]]]]> : tensor<4x1x3x3xf32> loc("w")
  %wt = mp.concat %w, %w, %w {axis = 1 : i64} : (tensor<4x1x3x3xf32>, tensor<4x1x3x3xf32>, tensor<4x1x3x3xf32>) -> tensor<4x3x3x3xf32> loc("wt")
  %y = mp.conv2d %x, %wt {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> loc("conv")
  return %y : tensor<1x4x6x6xf32>
}
