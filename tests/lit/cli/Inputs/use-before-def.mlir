// A value used before it is defined: the verifier's error carries a note
// pointing at the definition (tests/lit/cli/notes.test).
func.func @main(%x: tensor<4xf32> {mp.name = "x"}) -> (tensor<4xf32> {mp.name = "y"}) {
  %0 = mp.relu %1 : tensor<4xf32>
  %1 = mp.tanh %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
