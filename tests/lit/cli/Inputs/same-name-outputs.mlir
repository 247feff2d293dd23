// For tests/lit/cli/outputs.test: two different values under one output
// name, which names cannot tell apart.
func.func @main(%x: tensor<2x3xf32> {mp.name = "x"}) -> (tensor<2x3xf32> {mp.name = "y"}, tensor<2x3xf32> {mp.name = "y"}) {
  %r = mp.relu %x : tensor<2x3xf32> loc("r")
  %t = mp.tanh %x : tensor<2x3xf32> loc("t")
  return %r, %t : tensor<2x3xf32>, tensor<2x3xf32>
}
