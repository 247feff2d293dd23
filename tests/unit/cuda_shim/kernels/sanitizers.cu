// Memory errors that only a sanitizer build reports (MIXPREC_SANITIZE): the
// kernels are compiled with ASan and UBSan there, and the dynamic shared
// memory beyond the launch's size is poisoned.

// Reads smem[count]; the launch gives 32 floats.
extern "C" __global__ void smem_overflow(float *out, int count) {
  extern __shared__ float smem[];
  smem[threadIdx.x] = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0)
    out[0] = smem[count];
}

// Writes past the end of an n-element buffer.
extern "C" __global__ void heap_overflow(float *out, int n) { out[n + threadIdx.x] = 1.0f; }

// A 16-byte vector load from an address that is not 16-byte aligned.
extern "C" __global__ void misaligned_vector(const float *in, float *out) {
  out[0] = reinterpret_cast<const float4 *>(in + 1)->x;
}
