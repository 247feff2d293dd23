// Every atomic of the shim's subset, from every thread of several blocks.
extern "C" __global__ void atomics(int *imax, int *imin, unsigned *umax, unsigned *umin,
                                   unsigned *counter, unsigned *__restrict__ tickets, float *sum,
                                   float *__restrict__ sumBefore) {
  const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = static_cast<int>((g * 2654435761u) >> 8) - (1 << 22);
  atomicMax(imax, v);
  atomicMin(imin, v);
  atomicMax(umax, static_cast<unsigned>(v));
  atomicMin(umin, static_cast<unsigned>(v));
  // An increment by compare-and-swap, as code without atomicInc writes it.
  unsigned old = *counter, assumed;
  do {
    assumed = old;
    old = atomicCAS(counter, assumed, assumed + 1);
  } while (old != assumed);
  tickets[g] = old;
  sumBefore[g] = atomicAdd(sum, 1.0f);
}
