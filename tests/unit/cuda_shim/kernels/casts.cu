// Every conversion the emitter uses, through the CUDA headers' types.

// FP32 to FP16, BF16 and (saturating) FP8 E4M3 and E5M2.
extern "C" __global__ void f32_to_narrow(const float *__restrict__ in, __half *__restrict__ f16,
                                         __nv_bfloat16 *__restrict__ bf16,
                                         __nv_fp8_storage_t *__restrict__ e4m3,
                                         __nv_fp8_storage_t *__restrict__ e5m2, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float x = in[i];
    f16[i] = __float2half_rn(x);
    bf16[i] = __float2bfloat16_rn(x);
    e4m3[i] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    e5m2[i] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
  }
}

// FP16 and BF16 bit patterns (ushort) to FP32.
extern "C" __global__ void f16_bf16_to_f32(const ushort *__restrict__ bits, float *__restrict__ f16,
                                           float *__restrict__ bf16, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    __half_raw h;
    h.x = bits[i];
    f16[i] = __half2float(__half(h));
    __nv_bfloat16_raw b;
    b.x = bits[i];
    bf16[i] = __bfloat162float(__nv_bfloat16(b));
  }
}

// FP8 bytes to FP32 through FP16 (the only FP8 widening CUDA has), and
// through the __nv_fp8_e4m3 / __nv_fp8_e5m2 classes.
extern "C" __global__ void fp8_to_f32(const __nv_fp8_storage_t *__restrict__ bits,
                                      float *__restrict__ e4m3, float *__restrict__ e5m2,
                                      float *__restrict__ e4m3Class, float *__restrict__ e5m2Class,
                                      int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    e4m3[i] = __half2float(__half(__nv_cvt_fp8_to_halfraw(bits[i], __NV_E4M3)));
    e5m2[i] = __half2float(__half(__nv_cvt_fp8_to_halfraw(bits[i], __NV_E5M2)));
    __nv_fp8_e4m3 a;
    a.__x = bits[i];
    e4m3Class[i] = static_cast<float>(a);
    __nv_fp8_e5m2 b;
    b.__x = bits[i];
    e5m2Class[i] = static_cast<float>(b);
  }
}
