// mp IR whose weight names a dense_resource blob the file does not hold
// (readable-ir.test).
func.func @main(%x: tensor<2xf32> {mp.name = "x"}) -> (tensor<2xf32> {mp.name = "y"}) {
  %w = mp.constant dense_resource<w> : tensor<2xf32> loc("w")
  %y = mp.add %x, %w : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32> loc("y")
  return %y : tensor<2xf32>
}
