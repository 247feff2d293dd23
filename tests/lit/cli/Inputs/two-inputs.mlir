// For tests/lit/cli/files.test: a model with two inputs.
func.func @main(%a: tensor<2xf32> {mp.name = "a"}, %b: tensor<2xf32> {mp.name = "b"}) -> (tensor<2xf32> {mp.name = "y"}) {
  %y = mp.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32> loc("add")
  return %y : tensor<2xf32>
}
