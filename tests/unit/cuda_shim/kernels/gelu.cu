// GELU (tanh approximation) in FP32 with the result cast to FP16, written
// as the CPU backend computes it: 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)).
extern "C" __global__ void gelu_tanh_f16(const float *__restrict__ x, __half *__restrict__ y,
                                         int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = x[i];
    const float u2 = 1.59576912160573071176f * (v + 0.044715f * v * v * v);
    y[i] = __float2half_rn(v / (1.0f + expf(-u2)));
  }
}
