// For reshaped-constant.test: a weight reshaped before its use (an
// exported rotary table or a norm weight unsqueezed at run time).
func.func @main(%x: tensor<2x6xf32> {mp.name = "x"}) -> (tensor<2x6xf32> {mp.name = "y"}) {
  %w = mp.constant dense<0.5> : tensor<12xf32> loc("w")
  %r = mp.reshape %w : tensor<12xf32> -> tensor<2x6xf32> loc("r")
  %y = mp.mul %x, %r : tensor<2x6xf32>, tensor<2x6xf32> -> tensor<2x6xf32> loc("m")
  return %y : tensor<2x6xf32>
}
