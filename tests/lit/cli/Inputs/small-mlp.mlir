// A small MLP for the report and validate lit tests (tests/lit/cli/report.test,
// validate.test): named ops (loc("...")), one unnamed op (labelled
// small-mlp.mlir:LINE:COL), bias constants that adapt to the GEMM's dtype,
// an FP32-class softmax, and a residual-free linear layer.
func.func @main(%x: tensor<4x8xf32> {mp.name = "x"}) -> (tensor<4x4xf32> {mp.name = "probs"}) {
  %w1 = mp.constant dense<0.25> : tensor<8x16xf32> loc("fc1.weight")
  %b1 = mp.constant dense<0.1> : tensor<16xf32> loc("fc1.bias")
  %w2 = mp.constant dense<[[-0.375, -0.250, -0.125, 0.000],
      [0.125, 0.250, 0.375, -0.375],
      [-0.250, -0.125, 0.000, 0.125],
      [0.250, 0.375, -0.375, -0.250],
      [-0.125, 0.000, 0.125, 0.250],
      [0.375, -0.375, -0.250, -0.125],
      [0.000, 0.125, 0.250, 0.375],
      [-0.375, -0.250, -0.125, 0.000],
      [0.125, 0.250, 0.375, -0.375],
      [-0.250, -0.125, 0.000, 0.125],
      [0.250, 0.375, -0.375, -0.250],
      [-0.125, 0.000, 0.125, 0.250],
      [0.375, -0.375, -0.250, -0.125],
      [0.000, 0.125, 0.250, 0.375],
      [-0.375, -0.250, -0.125, 0.000],
      [0.125, 0.250, 0.375, -0.375]]> : tensor<16x4xf32> loc("fc2.weight")
  %b2 = mp.constant dense<[0.5, -0.5, 0.25, 0.0]> : tensor<4xf32> loc("fc2.bias")
  %h = mp.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc1")
  %hb = mp.add %h, %b1 : tensor<4x16xf32>, tensor<16xf32> -> tensor<4x16xf32> loc("fc1.bias_add")
  %a = mp.tanh %hb : tensor<4x16xf32>
  %l = mp.linear %a, %w2, %b2 : (tensor<4x16xf32>, tensor<16x4xf32>, tensor<4xf32>) -> tensor<4x4xf32> loc("fc2")
  %p = mp.softmax %l {axis = 1 : i64} : tensor<4x4xf32> -> tensor<4x4xf32> loc("probs")
  return %p : tensor<4x4xf32>
}
