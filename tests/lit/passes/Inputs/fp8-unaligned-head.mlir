// A 10-class head (n = 10): no FP8 GEMM for it (k and n must be multiples
// of 16), so FP8 forced on it is refused by name (assign-precision-invalid.mlir).
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x10xf32> {
  %w = mp.constant dense<0.5> : tensor<10x16xf32>
  %0 = mp.linear %x, %w {transpose_weight = true} : (tensor<4x16xf32>, tensor<10x16xf32>) -> tensor<4x10xf32> loc("head")
  return %0 : tensor<4x10xf32>
}
