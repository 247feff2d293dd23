// Dynamic shared memory: poisoned (all bits set) at the start of every
// block, then written; the next block sees the poison again.
extern "C" __global__ void read_fresh_smem(unsigned *__restrict__ out, int count) {
  extern __shared__ float smem[];
  if (threadIdx.x == 0)
    for (int i = 0; i < count; ++i)
      out[blockIdx.x * count + i] = __float_as_uint(smem[i]);
  __syncthreads();
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    smem[i] = static_cast<float>(i);
}
