// For tests/lit/cli/files.test: int64 ids go in and come out unchanged, so
// a value above 2^24 (which float32 cannot hold) shows any trip through float.
func.func @main(%ids: tensor<3xi64> {mp.name = "ids"}) -> (tensor<3x1xi64> {mp.name = "out"}) {
  %r = mp.reshape %ids : tensor<3xi64> -> tensor<3x1xi64> loc("r")
  return %r : tensor<3x1xi64>
}
