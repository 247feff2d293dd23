// For tests/lit/cli/outputs.test: graph outputs that share a value. `r` is
// returned as "a" and "b" and as "a" again, the input as "x_copy", a
// constant as "c".
func.func @main(%x: tensor<2x3xf32> {mp.name = "x"}) -> (tensor<2x3xf32> {mp.name = "a"}, tensor<2x3xf32> {mp.name = "b"}, tensor<2x3xf32> {mp.name = "a"}, tensor<2x3xf32> {mp.name = "x_copy"}, tensor<2x3xf32> {mp.name = "c"}) {
  %r = mp.relu %x : tensor<2x3xf32> loc("r")
  %c = mp.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32> loc("k")
  return %r, %r, %r, %x, %c : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
