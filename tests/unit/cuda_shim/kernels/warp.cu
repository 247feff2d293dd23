// Warp-synchronous operations: every shuffle mode and width, the three
// shuffled types, and __syncwarp on two halves of a warp.

// out[t] = the shuffle `mode` (0 idx, 1 up, 2 down, 3 xor) of t * 7 + 1000.
extern "C" __global__ void shuffle_ints(int *__restrict__ out, int mode, int arg, int width) {
  const int t = threadIdx.x;
  const int v = t * 7 + 1000;
  int r = 0;
  if (mode == 0)
    r = __shfl_sync(0xffffffffu, v, arg, width);
  else if (mode == 1)
    r = __shfl_up_sync(0xffffffffu, v, static_cast<unsigned>(arg), width);
  else if (mode == 2)
    r = __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(arg), width);
  else
    r = __shfl_xor_sync(0xffffffffu, v, arg, width);
  out[t] = r;
}

// Floats keep their bits (NaN payloads, -0), ints their sign.
extern "C" __global__ void shuffle_types(const float *__restrict__ f,
                                         const unsigned *__restrict__ u, const int *__restrict__ i,
                                         float *__restrict__ fo, unsigned *__restrict__ uo,
                                         int *__restrict__ io) {
  const int t = threadIdx.x;
  fo[t] = __shfl_xor_sync(0xffffffffu, f[t], 1);
  uo[t] = __shfl_down_sync(0xffffffffu, u[t], 3);
  io[t] = __shfl_xor_sync(0xffffffffu, i[t], 16);
}

// Each half of the warp synchronizes on its own mask, in its own branch,
// then reads what the other lanes of its half wrote.
extern "C" __global__ void syncwarp_halves(int *__restrict__ out) {
  __shared__ int values[32];
  const int lane = threadIdx.x;
  values[lane] = lane * 3;
  if (lane < 16) {
    __syncwarp(0x0000ffffu);
    out[lane] = values[15 - lane];
  } else {
    __syncwarp(0xffff0000u);
    out[lane] = values[47 - lane];
  }
}

// A warp sum with the usual butterfly, in every warp of the block.
extern "C" __global__ void __launch_bounds__(1024)
    warp_sums(const float *__restrict__ in, float *__restrict__ out) {
  float v = in[threadIdx.x];
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  out[threadIdx.x] = v;
}
