// Row softmax, one block per row: the row's maximum and sum of exponentials
// in FP32, each reduced by warp shuffles and then across warps through
// shared memory; the exponentials are kept in dynamic shared memory (the
// launch gives cols floats).

__device__ __forceinline__ float warpMax(float v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ __forceinline__ float warpSum(float v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The block's maximum (IsMax) or sum of v; every thread gets it. `partial`
// holds one value per warp.
template <bool IsMax> __device__ __forceinline__ float blockReduce(float v, float *partial) {
  const int lane = threadIdx.x % warpSize;
  const int warp = threadIdx.x / warpSize;
  const int warps = (blockDim.x + warpSize - 1) / warpSize;
  const float identity = IsMax ? -INFINITY : 0.0f;
  v = IsMax ? warpMax(v) : warpSum(v);
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? partial[lane] : identity;
    v = IsMax ? warpMax(v) : warpSum(v);
    if (lane == 0)
      partial[0] = v;
  }
  __syncthreads();
  v = partial[0];
  // partial is reused by the next reduction.
  __syncthreads();
  return v;
}

__device__ __forceinline__ void store(float *out, float v) { *out = v; }
__device__ __forceinline__ void store(__nv_bfloat16 *out, float v) {
  *out = __float2bfloat16_rn(v);
}

template <typename Out>
__device__ __forceinline__ void softmaxRow(const float *__restrict__ in, Out *__restrict__ out,
                                           int cols, float *partial, float *exps) {
  const float *x = in + static_cast<size_t>(blockIdx.x) * cols;
  Out *y = out + static_cast<size_t>(blockIdx.x) * cols;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < cols; i += blockDim.x)
    m = fmaxf(m, x[i]);
  m = blockReduce<true>(m, partial);
  float s = 0.0f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) {
    const float e = expf(x[i] - m);
    exps[i] = e;
    s += e;
  }
  s = blockReduce<false>(s, partial);
  const float inv = 1.0f / s;
  for (int i = threadIdx.x; i < cols; i += blockDim.x)
    store(y + i, exps[i] * inv);
}

extern "C" __global__ void softmax_rows_f32(const float *__restrict__ in, float *__restrict__ out,
                                            int cols) {
  __shared__ float partial[32];
  extern __shared__ float smem[];
  softmaxRow(in, out, cols, partial, smem);
}

extern "C" __global__ void softmax_rows_bf16(const float *__restrict__ in,
                                             __nv_bfloat16 *__restrict__ out, int cols) {
  __shared__ float partial[32];
  extern __shared__ float smem[];
  softmaxRow(in, out, cols, partial, smem);
}
