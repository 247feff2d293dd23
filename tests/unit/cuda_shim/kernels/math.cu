// The math functions of the shim's subset, one output plane each.
extern "C" __global__ void math_f32(const float *__restrict__ x, float *__restrict__ out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float v = x[i];
    float *o = out + i;
    o[0 * n] = expf(v);
    o[1 * n] = logf(v);
    o[2 * n] = tanhf(v);
    o[3 * n] = erff(v);
    o[4 * n] = sqrtf(v);
    o[5 * n] = rsqrtf(v);
    o[6 * n] = fmaxf(v, 0.5f);
    o[7 * n] = fminf(v, 0.5f);
    o[8 * n] = fabsf(v);
    o[9 * n] = isnan(v) ? 1.0f : 0.0f;
    o[10 * n] = isinf(v) ? 1.0f : 0.0f;
    o[11 * n] = __int_as_float(__float_as_int(v) ^ static_cast<int>(0x80000000u));
    o[12 * n] = __uint_as_float(__float_as_uint(v) & 0x7fffffffu);
    o[13 * n] = __fadd_rn(v, 0.1f);
    o[14 * n] = __fsub_rn(v, 0.1f);
    o[15 * n] = __fmul_rn(v, 0.1f);
    o[16 * n] = __fdiv_rn(v, 0.1f);
    o[17 * n] = __fmaf_rn(v, v, 0.1f);
    o[18 * n] = v * v + 0.1f; // two roundings: no FMA contraction
  }
}
