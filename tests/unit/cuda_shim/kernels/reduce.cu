// A block sum over shared memory, one block per row of blockDim.x values,
// with and without the barrier between writing the shared array and the
// tree that reads it.
template <bool SyncBeforeTree>
__device__ __forceinline__ void blockSum(const float *__restrict__ in, float *__restrict__ out,
                                         float *partial) {
  const unsigned t = threadIdx.x;
  partial[t] = in[blockIdx.x * blockDim.x + t];
  if (SyncBeforeTree)
    __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s)
      partial[t] += partial[t + s];
    __syncthreads();
  }
  if (t == 0)
    out[blockIdx.x] = partial[0];
}

extern "C" __global__ void block_sum(const float *__restrict__ in, float *__restrict__ out) {
  __shared__ float partial[1024];
  blockSum<true>(in, out, partial);
}

extern "C" __global__ void block_sum_missing_sync(const float *__restrict__ in,
                                                  float *__restrict__ out) {
  __shared__ float partial[1024];
  blockSum<false>(in, out, partial);
}
