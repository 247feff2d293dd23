// For tests/lit/cli/files.test: two different values under one output name.
func.func @main(%x: tensor<2xf32> {mp.name = "x"}) -> (tensor<2xf32> {mp.name = "y"}, tensor<2xf32> {mp.name = "y"}) {
  %r = mp.relu %x : tensor<2xf32> loc("r")
  %t = mp.tanh %x : tensor<2xf32> loc("t")
  return %r, %t : tensor<2xf32>, tensor<2xf32>
}
