// mp IR whose weight is a dense_resource blob, MLIR's text form for large
// data (readable-ir.test): the blob is 4 bytes of alignment, then the
// float32 values 1.0 and 2.0.
func.func @main(%x: tensor<2xf32> {mp.name = "x"}) -> (tensor<2xf32> {mp.name = "y"}) {
  %w = mp.constant dense_resource<w> : tensor<2xf32> loc("w")
  %y = mp.add %x, %w : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32> loc("y")
  return %y : tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F00000040"
    }
  }
#-}
