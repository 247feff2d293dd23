// For tests/lit/cli/fp8-nonfinite.test: x = [3e38, 3e38, -3e38, -3e38, 0...]
// overflows the FP32 matmul (inf or NaN); at FP8 the values are finite
// (amax 3e38, all quantized to +-448) and the sum is 0. k = n = 16, so the
// FP8 policy gives the matmul an FP8 GEMM.
func.func @main(%x: tensor<2x16xf32> {mp.name = "x"}) -> (tensor<2x16xf32> {mp.name = "y"}) {
  %w = mp.constant dense<1.0> : tensor<16x16xf32> loc("w")
  %y = mp.matmul %x, %w : (tensor<2x16xf32>, tensor<16x16xf32>) -> tensor<2x16xf32> loc("mm")
  return %y : tensor<2x16xf32>
}
