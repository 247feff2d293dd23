// Every thread writes its indices: checks threadIdx, blockIdx, blockDim,
// gridDim and the order of threads in a block.
extern "C" __global__ void write_indices(unsigned *__restrict__ out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  unsigned *slot = out + 8 * (block * threads + thread);
  slot[0] = threadIdx.x;
  slot[1] = threadIdx.y;
  slot[2] = threadIdx.z;
  slot[3] = blockIdx.x;
  slot[4] = blockIdx.y;
  slot[5] = blockIdx.z;
  slot[6] = blockDim.x * 1000000 + blockDim.y * 1000 + blockDim.z;
  slot[7] = gridDim.x * 1000000 + gridDim.y * 1000 + gridDim.z;
}
