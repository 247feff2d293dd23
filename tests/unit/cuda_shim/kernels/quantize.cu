// FP8 quantization, x * scale saturated to the format's largest finite
// value, and in the same kernel the tensor's amax: max |x| as float bits,
// reduced over the warp with shuffles and across warps and blocks with
// atomicMax (for non-negative floats the bits order as the values; a NaN's
// bits, sign cleared, exceed every other, so NaN wins as it must).

template <__nv_fp8_interpretation_t Format>
__device__ __forceinline__ void
quantize(const float *__restrict__ x, const float *__restrict__ scale,
         __nv_fp8_storage_t *__restrict__ out, unsigned *amaxBits, int n) {
  const float s = *scale;
  unsigned local = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = x[i];
    const unsigned bits = __float_as_uint(fabsf(v));
    local = bits > local ? bits : local;
    // A non-finite value or scale gives NaN: saturation is for finite values.
    const bool finite = !isnan(v) && !isinf(v) && !isnan(s) && !isinf(s);
    out[i] = finite ? __nv_cvt_float_to_fp8(v * s, __NV_SATFINITE, Format)
                    : static_cast<__nv_fp8_storage_t>(0x7f);
  }
  for (int offset = warpSize / 2; offset > 0; offset /= 2) {
    const unsigned other = __shfl_xor_sync(0xffffffffu, local, offset);
    local = other > local ? other : local;
  }
  if (threadIdx.x % warpSize == 0)
    atomicMax(amaxBits, local);
}

extern "C" __global__ void quantize_e4m3(const float *__restrict__ x,
                                         const float *__restrict__ scale,
                                         __nv_fp8_storage_t *__restrict__ out, unsigned *amaxBits,
                                         int n) {
  quantize<__NV_E4M3>(x, scale, out, amaxBits, n);
}

extern "C" __global__ void quantize_e5m2(const float *__restrict__ x,
                                         const float *__restrict__ scale,
                                         __nv_fp8_storage_t *__restrict__ out, unsigned *amaxBits,
                                         int n) {
  quantize<__NV_E5M2>(x, scale, out, amaxBits, n);
}
