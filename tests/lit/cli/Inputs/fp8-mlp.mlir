// For the FP8 lit tests (tests/lit/cli/report.test, cuda-routines.test): an
// MLP whose first GEMM has k and n multiples of 16 (cuBLASLt's FP8
// alignment), so it runs in FP8, and a 10-class head (n = 10) that the FP8
// policy keeps in BF16 (policy:lowp(fp8-unaligned)).
func.func @main(%x: tensor<4x16xf32> {mp.name = "x"}) -> (tensor<4x10xf32> {mp.name = "probs"}) {
  %w1 = mp.constant dense<0.25> : tensor<16x32xf32> loc("fc1.weight")
  %b1 = mp.constant dense<0.1> : tensor<32xf32> loc("fc1.bias")
  %w2 = mp.constant dense<-0.125> : tensor<10x32xf32> loc("fc2.weight")
  %b2 = mp.constant dense<0.5> : tensor<10xf32> loc("fc2.bias")
  %h = mp.matmul %x, %w1 : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32> loc("fc1")
  %hb = mp.add %h, %b1 : tensor<4x32xf32>, tensor<32xf32> -> tensor<4x32xf32> loc("fc1.bias_add")
  %a = mp.tanh %hb : tensor<4x32xf32> loc("act")
  %l = mp.linear %a, %w2, %b2 {transpose_weight = true} : (tensor<4x32xf32>, tensor<10x32xf32>, tensor<10xf32>) -> tensor<4x10xf32> loc("fc2")
  %p = mp.softmax %l {axis = 1 : i64} : tensor<4x10xf32> -> tensor<4x10xf32> loc("probs")
  return %p : tensor<4x10xf32>
}
