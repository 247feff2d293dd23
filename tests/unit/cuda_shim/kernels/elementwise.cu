// out = x * y - x from BF16 inputs to an FP16 output, eight elements a
// thread through 16-byte uint4 loads and stores, then the tail one by one.
extern "C" __global__ void mul_sub_bf16_to_f16(const __nv_bfloat16 *__restrict__ x,
                                               const __nv_bfloat16 *__restrict__ y,
                                               __half *__restrict__ out, int n) {
  const int stride = gridDim.x * blockDim.x;
  const int vectors = n / 8;
  for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < vectors; v += stride) {
    const uint4 xv = reinterpret_cast<const uint4 *>(x)[v];
    const uint4 yv = reinterpret_cast<const uint4 *>(y)[v];
    const __nv_bfloat16 *xs = reinterpret_cast<const __nv_bfloat16 *>(&xv);
    const __nv_bfloat16 *ys = reinterpret_cast<const __nv_bfloat16 *>(&yv);
    uint4 ov;
    __half *os = reinterpret_cast<__half *>(&ov);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float a = __bfloat162float(xs[k]);
      const float b = __bfloat162float(ys[k]);
      os[k] = __float2half_rn(a * b - a);
    }
    reinterpret_cast<uint4 *>(out)[v] = ov;
  }
  for (int i = vectors * 8 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float a = __bfloat162float(x[i]);
    const float b = __bfloat162float(y[i]);
    out[i] = __float2half_rn(a * b - a);
  }
}
