// For tests/lit/cli/row-kernel-broadcast.test: a [1, 8] bias added before a
// softmax over the last dim fuses into one row kernel over [2, 4, 8].
func.func @main(%x: tensor<2x4x8xf32> {mp.name = "x"}, %b: tensor<1x8xf32> {mp.name = "b"}) -> (tensor<2x4x8xf32> {mp.name = "y"}) {
  %a = mp.add %x, %b : tensor<2x4x8xf32>, tensor<1x8xf32> -> tensor<2x4x8xf32> loc("bias")
  %y = mp.softmax %a {axis = 2 : i64} : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("sm")
  return %y : tensor<2x4x8xf32>
}
