// An SSA value defined twice: the parser's error carries a note pointing
// at the first definition (tests/lit/cli/notes.test).
func.func @main(%x: tensor<4xf32> {mp.name = "x"}) -> (tensor<4xf32> {mp.name = "y"}) {
  %0 = mp.relu %x : tensor<4xf32>
  %0 = mp.tanh %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
