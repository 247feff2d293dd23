// The FP8 block scaling routine kernels (CudaRoutines.cpp: block_scale,
// block_quantize, block_scaled_gemm; common/numerics/BlockScaling.h):
// cuda_block_routines_on_shim runs each on the CUDA shim against the CPU
// backend bit for bit (random data, power-of-two scales), with partial
// blocks, 1x128, 128x128 and 1x32 blocks, E4M3 and E5M2, a rank-3 input,
// biases and epilogues; cuda_block_routines_nvrtc compiles them for sm_80
// and sm_90.
module {
  func.func @"block_scale$f32_1x128_e4m3"(%a0: tensor<9x272xf32>) -> tensor<9x3xf32> {
    %0 = mpk.call block_scale(%a0) #mpk.block_scale<block_rows = 1, block_cols = 128, recipe = 0, margin = 0, format = f8E4M3FN> {ops = ["s"]} : (tensor<9x272xf32>) -> tensor<9x3xf32>
    return %0 : tensor<9x3xf32>
  }
  func.func @"block_scale$bf16_1x32_e5m2_margin"(%a0: tensor<2x5x96xbf16>) -> tensor<2x5x3xf32> {
    %0 = mpk.call block_scale(%a0) #mpk.block_scale<block_rows = 1, block_cols = 32, recipe = 1, margin = 1, format = f8E5M2> {ops = ["s"]} : (tensor<2x5x96xbf16>) -> tensor<2x5x3xf32>
    return %0 : tensor<2x5x3xf32>
  }
  func.func @"block_scale$f16_128x128"(%a0: tensor<130x200xf16>) -> tensor<2x2xf32> {
    %0 = mpk.call block_scale(%a0) #mpk.block_scale<block_rows = 128, block_cols = 128, recipe = 0, margin = 0, format = f8E4M3FN> {ops = ["s"]} : (tensor<130x200xf16>) -> tensor<2x2xf32>
    return %0 : tensor<2x2xf32>
  }
  func.func @"block_quantize$f32_1x128_e4m3"(%a0: tensor<9x272xf32>, %a1: tensor<9x3xf32>) -> tensor<9x272xf8E4M3FN> {
    %0 = mpk.call block_quantize(%a0, %a1) #mpk.block_scale<block_rows = 1, block_cols = 128, recipe = 0, margin = 0, format = f8E4M3FN> {ops = ["q"]} : (tensor<9x272xf32>, tensor<9x3xf32>) -> tensor<9x272xf8E4M3FN>
    return %0 : tensor<9x272xf8E4M3FN>
  }
  func.func @"block_quantize$bf16_128x128_e5m2"(%a0: tensor<130x64xbf16>, %a1: tensor<2x1xf32>) -> tensor<130x64xf8E5M2> {
    %0 = mpk.call block_quantize(%a0, %a1) #mpk.block_scale<block_rows = 128, block_cols = 128, recipe = 0, margin = 0, format = f8E5M2> {ops = ["q"]} : (tensor<130x64xbf16>, tensor<2x1xf32>) -> tensor<130x64xf8E5M2>
    return %0 : tensor<130x64xf8E5M2>
  }
  func.func @"block_scaled_gemm$e4m3_bias_bf16"(%a0: tensor<9x272xf8E4M3FN>, %a1: tensor<48x272xf8E4M3FN>, %a2: tensor<9x3xf32>, %a3: tensor<1x3xf32>, %a4: tensor<48xbf16>) -> tensor<9x48xbf16> {
    %0 = mpk.call block_scaled_gemm(%a0, %a1, %a2, %a3, %a4) #mpk.block_gemm<a_block_rows = 1, b_block_rows = 128, k_block = 128, epilogue = 0> {ops = ["g"]} : (tensor<9x272xf8E4M3FN>, tensor<48x272xf8E4M3FN>, tensor<9x3xf32>, tensor<1x3xf32>, tensor<48xbf16>) -> tensor<9x48xbf16>
    return %0 : tensor<9x48xbf16>
  }
  func.func @"block_scaled_gemm$e5m2_e4m3_relu_f32"(%a0: tensor<6x80xf8E5M2>, %a1: tensor<20x80xf8E4M3FN>, %a2: tensor<6x3xf32>, %a3: tensor<20x3xf32>, %a4: tensor<20xf32>) -> tensor<6x20xf32> {
    %0 = mpk.call block_scaled_gemm(%a0, %a1, %a2, %a3, %a4) #mpk.block_gemm<a_block_rows = 1, b_block_rows = 1, k_block = 32, epilogue = 1> {ops = ["g"]} : (tensor<6x80xf8E5M2>, tensor<20x80xf8E4M3FN>, tensor<6x3xf32>, tensor<20x3xf32>, tensor<20xf32>) -> tensor<6x20xf32>
    return %0 : tensor<6x20xf32>
  }
  func.func @"block_scaled_gemm$rank3_mx_gelu"(%a0: tensor<2x5x64xf8E4M3FN>, %a1: tensor<24x64xf8E4M3FN>, %a2: tensor<2x5x2xf32>, %a3: tensor<24x2xf32>) -> tensor<2x5x24xbf16> {
    %0 = mpk.call block_scaled_gemm(%a0, %a1, %a2, %a3) #mpk.block_gemm<a_block_rows = 1, b_block_rows = 1, k_block = 32, epilogue = 2> {ops = ["g"]} : (tensor<2x5x64xf8E4M3FN>, tensor<24x64xf8E4M3FN>, tensor<2x5x2xf32>, tensor<24x2xf32>) -> tensor<2x5x24xbf16>
    return %0 : tensor<2x5x24xbf16>
  }
}
