// For tests/lit/cli/files.test: two outputs whose names differ only in a
// character a file name cannot hold ("a/b" and "a_b").
func.func @main(%x: tensor<2x3xf32> {mp.name = "x"}) -> (tensor<2x3xf32> {mp.name = "a/b"}, tensor<2x3xf32> {mp.name = "a_b"}) {
  %r = mp.relu %x : tensor<2x3xf32> loc("r")
  %t = mp.tanh %x : tensor<2x3xf32> loc("t")
  return %r, %t : tensor<2x3xf32>, tensor<2x3xf32>
}
