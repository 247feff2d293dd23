// Kernels that synchronize wrongly; each launch must fail with an error
// naming the threads and lines at fault.

// Thread 3 leaves before the barrier the others wait at.
extern "C" __global__ void exit_before_barrier(int *out) {
  if (threadIdx.x == 3)
    return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

// Two halves of the block wait at two different barriers.
extern "C" __global__ void divergent_barriers(int *out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

// A full-mask butterfly in a block of 16 threads reads lanes 16-31.
extern "C" __global__ void shuffle_missing_lane(int *out) {
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 16);
}

// Lanes 0-15 shuffle among themselves but read lanes 16-31.
extern "C" __global__ void shuffle_outside_mask(int *out) {
  if (threadIdx.x < 16)
    out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, static_cast<int>(threadIdx.x), 16);
}

// Lane 0 names only lane 1 in its mask.
extern "C" __global__ void mask_without_self(int *out) {
  if (threadIdx.x == 0)
    out[0] = __shfl_sync(0x2u, 5, 1);
}

// Half the warp shuffles, the other half waits at the block barrier.
extern "C" __global__ void warp_against_barrier(int *out) {
  if (threadIdx.x < 16)
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
  else
    __syncthreads();
}

// A width that is not a power of two.
extern "C" __global__ void bad_width(int *out) {
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1u, 12);
}

// Lane 5 leaves before a full-warp shuffle.
extern "C" __global__ void exit_before_shuffle(int *out) {
  if (threadIdx.x == 5)
    return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

// Fails in block 2 only, after blocks 0 and 1 ran.
extern "C" __global__ void fails_in_block_two(int *out) {
  if (blockIdx.x == 2 && threadIdx.x == 3)
    return;
  __syncthreads();
  out[blockIdx.x] = 1;
}
