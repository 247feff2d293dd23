//===- AttentionKernel.cpp - FlashAttention-2 style CUDA kernels ----------===//
//
// Each kernel's source is the shared device code (templates, guarded so a
// program with several attention kernels defines it once), a namespace
// with the kernel's configuration (shapes, dtypes, flags as constants) and
// the extern "C" kernel instantiating the forward or backward template with
// it. Shapes are compile-time constants, as in every emitted kernel: the
// loops over head dims unroll and the fragments stay in registers.
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/AttentionKernel.h"
#include "codegen/Cuda/CudaTypes.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

namespace mixprec::codegen {
namespace {

/// The device code every attention kernel uses (see AttentionKernel.h).
const char *const kCommon = R"MPATTN(
// ---- Attention kernels' shared code (codegen/Cuda/AttentionKernel.h) --------
// Defined once per program: every attention kernel's source carries it.
#ifndef MP_ATTENTION_COMMON
#define MP_ATTENTION_COMMON
namespace mp_attn {

// Operands of the tensor-core products, by kind: 0 BF16 (FP8 widens to it,
// exactly), 1 FP16, 2 FP32 (no tensor cores). `elem` is one operand in
// shared memory, `pair` two of them as a fragment register holds them (the
// lower index in the low half).
template <int Kind> struct Op;
template <> struct Op<0> {
  typedef unsigned short elem;
  typedef unsigned pair;
  static __device__ __forceinline__ elem fromFloat(float x) {
    __nv_bfloat16_raw r = __float2bfloat16_rn(x);
    return r.x;
  }
  static __device__ __forceinline__ float lo(pair p) { return __uint_as_float(p << 16); }
  static __device__ __forceinline__ float hi(pair p) { return __uint_as_float(p & 0xffff0000u); }
  static __device__ __forceinline__ pair pack(elem l, elem h) {
    return (unsigned)l | ((unsigned)h << 16);
  }
  static __device__ __forceinline__ pair load(const elem *p) {
    return *reinterpret_cast<const unsigned *>(p);
  }
  static __device__ __forceinline__ pair shfl(pair p, int lane) {
    return __shfl_sync(0xffffffffu, p, lane);
  }
};
template <> struct Op<1> {
  typedef unsigned short elem;
  typedef unsigned pair;
  static __device__ __forceinline__ elem fromFloat(float x) {
    __half_raw r = __float2half_rn(x);
    return r.x;
  }
  static __device__ __forceinline__ float toFloat(unsigned short bits) {
    __half_raw r;
    r.x = bits;
    return __half2float(__half(r));
  }
  static __device__ __forceinline__ float lo(pair p) {
    return toFloat((unsigned short)(p & 0xffffu));
  }
  static __device__ __forceinline__ float hi(pair p) { return toFloat((unsigned short)(p >> 16)); }
  static __device__ __forceinline__ pair pack(elem l, elem h) {
    return (unsigned)l | ((unsigned)h << 16);
  }
  static __device__ __forceinline__ pair load(const elem *p) {
    return *reinterpret_cast<const unsigned *>(p);
  }
  static __device__ __forceinline__ pair shfl(pair p, int lane) {
    return __shfl_sync(0xffffffffu, p, lane);
  }
};
template <> struct Op<2> {
  typedef float elem;
  typedef float2 pair;
  static __device__ __forceinline__ elem fromFloat(float x) { return x; }
  static __device__ __forceinline__ float lo(pair p) { return p.x; }
  static __device__ __forceinline__ float hi(pair p) { return p.y; }
  static __device__ __forceinline__ pair pack(elem l, elem h) { return make_float2(l, h); }
  static __device__ __forceinline__ pair load(const elem *p) {
    return *reinterpret_cast<const float2 *>(p);
  }
  static __device__ __forceinline__ pair shfl(pair p, int lane) {
    return make_float2(__shfl_sync(0xffffffffu, p.x, lane), __shfl_sync(0xffffffffu, p.y, lane));
  }
};

// D += A * B for one m16n8k16 tile of a warp, A 16x16 row-major, B 16x8
// column-major, in mma.sync's fragment layout: lane = 4 * g + t holds
//   a[0] = A[g][2t..2t+1],  a[1] = A[g+8][2t..2t+1],
//   a[2] = A[g][2t+8..2t+9], a[3] = A[g+8][2t+8..2t+9],
//   b[0] = B[2t..2t+1][g],   b[1] = B[2t+8..2t+9][g],
//   c = D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1].
// This is the same operation from shuffles: each lane gathers its two rows
// of A and two columns of B from the lanes holding them, and sums the 16
// products (exact for BF16/FP16 operands) in FP32 with fused multiply-adds.
// It runs where there are no tensor cores for the kind (FP32) and on the
// CUDA shim.
template <int Kind>
__device__ __forceinline__ void mmaShuffled(float c[4], const typename Op<Kind>::pair a[4],
                                            const typename Op<Kind>::pair b[2]) {
  typedef Op<Kind> O;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int kq = 0; kq < 4; ++kq) {
    typename O::pair ar[4], b0[2], b1[2];
#pragma unroll
    for (int r = 0; r < 4; ++r)
      ar[r] = O::shfl(a[r], 4 * g + kq);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      b0[r] = O::shfl(b[r], 8 * t + kq);
      b1[r] = O::shfl(b[r], 8 * t + 4 + kq);
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      // k = 2kq, 2kq + 1 (r = 0) and 2kq + 8, 2kq + 9 (r = 1).
      const typename O::pair top = ar[2 * r], bottom = ar[2 * r + 1];
      acc[0] = __fmaf_rn(O::lo(top), O::lo(b0[r]), acc[0]);
      acc[0] = __fmaf_rn(O::hi(top), O::hi(b0[r]), acc[0]);
      acc[1] = __fmaf_rn(O::lo(top), O::lo(b1[r]), acc[1]);
      acc[1] = __fmaf_rn(O::hi(top), O::hi(b1[r]), acc[1]);
      acc[2] = __fmaf_rn(O::lo(bottom), O::lo(b0[r]), acc[2]);
      acc[2] = __fmaf_rn(O::hi(bottom), O::hi(b0[r]), acc[2]);
      acc[3] = __fmaf_rn(O::lo(bottom), O::lo(b1[r]), acc[3]);
      acc[3] = __fmaf_rn(O::hi(bottom), O::hi(b1[r]), acc[3]);
    }
  }
#pragma unroll
  for (int r = 0; r < 4; ++r)
    c[r] += acc[r];
}

template <int Kind>
__device__ __forceinline__ void mma(float c[4], const typename Op<Kind>::pair a[4],
                                    const typename Op<Kind>::pair b[2]) {
#if defined(__CUDA_ARCH__)
  if constexpr (Kind == 0) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (Kind == 1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    mmaShuffled<Kind>(c, a, b);
  }
#else
  mmaShuffled<Kind>(c, a, b);
#endif
}

// A as mma's A fragments: rows row0 + {g, g + 8} of the row-major [rows,
// Cols] matrix at p, widened (or, for a gradient, rounded) to the operand
// kind; a[kk] covers columns 16 kk .. 16 kk + 15. Rows past `rows` are 0.
template <class C, int Cols, class T>
__device__ __forceinline__ void loadRowsA(typename Op<C::kind>::pair (*a)[4], const T *p,
                                          long long row0, long long rows) {
  typedef Op<C::kind> O;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int kk = 0; kk < Cols / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const long long row = row0 + g + 8 * (r & 1);
      const int col = kk * 16 + 2 * t + 8 * (r >> 1);
      const bool in = row < rows;
      a[kk][r] = O::pack(O::fromFloat(in ? C::load(p, row * Cols + col) : 0.0f),
                         O::fromFloat(in ? C::load(p, row * Cols + col + 1) : 0.0f));
    }
}

// Whether a T is an operand of the kind as it is (copied, not converted).
template <int Kind, class T> struct SameBits {
  static constexpr bool value = false;
};
template <> struct SameBits<0, __nv_bfloat16> {
  static constexpr bool value = true;
};
template <> struct SameBits<1, __half> {
  static constexpr bool value = true;
};
template <> struct SameBits<2, float> {
  static constexpr bool value = true;
};

// Rows n0 .. n0 + N - 1 of the row-major [rows, Cols] matrix at p into
// shared memory s as operands: s[n * Ld + c], or transposed s[c * Ld + n].
// Rows past `rows` are 0 (a key past the end must not bring a NaN into a
// product with its zero probability). A copy moves 16 bytes per access:
// Cols is a multiple of 16 elements and Ld of 16 bytes, so with p 16-byte
// aligned every access is; a conversion (FP8 widening, a gradient's
// rounding) goes element by element.
template <class C, int N, int Cols, int Ld, bool Transpose, class T>
__device__ __forceinline__ void loadTile(typename Op<C::kind>::elem *s, const T *p, long long n0,
                                         long long rows) {
  typedef typename Op<C::kind>::elem E;
  if constexpr (SameBits<C::kind, T>::value) {
    constexpr int V = 16 / sizeof(T);
    union Pack {
      uint4 bits;
      E e[V];
    };
    for (int idx = threadIdx.x; idx < N * Cols / V; idx += blockDim.x) {
      const int n = idx / (Cols / V), c = idx % (Cols / V) * V;
      const long long row = n0 + n;
      Pack pack;
      pack.bits = make_uint4(0u, 0u, 0u, 0u);
      if (row < rows)
        pack.bits = *reinterpret_cast<const uint4 *>(p + row * Cols + c);
      if constexpr (Transpose) {
#pragma unroll
        for (int x = 0; x < V; ++x)
          s[(c + x) * Ld + n] = pack.e[x];
      } else {
        *reinterpret_cast<uint4 *>(s + n * Ld + c) = pack.bits;
      }
    }
  } else {
    for (int idx = threadIdx.x; idx < N * Cols; idx += blockDim.x) {
      const int n = idx / Cols, c = idx % Cols;
      const long long row = n0 + n;
      s[Transpose ? c * Ld + n : n * Ld + c] =
          Op<C::kind>::fromFloat(row < rows ? C::load(p, row * Cols + c) : 0.0f);
    }
  }
}

// The kernel's score: scale * dot + bias, -inf where masked (causal, or a
// row or key past the end).
template <class C>
__device__ __forceinline__ float score(float dot, float scaleQK, const typename C::bias_t *bias,
                                       long long b, long long h, long long i, long long j) {
  if (i >= C::Sq || j >= C::Sk || (C::causal && j > i + (C::Sk - C::Sq)))
    return MP_NEG_INF;
  float x = dot * scaleQK;
  if constexpr (C::hasBias)
    x += C::load(bias, b * C::bs0 + h * C::bs1 + i * C::bs2 + j * C::bs3);
  return x;
}

// round_P of a probability, as the P.V product's operand: FP8 takes the
// E4M3 value of p * 256 (the output is divided by 256 at the end).
template <class C> __device__ __forceinline__ typename Op<C::kind>::elem roundP(float p) {
  return Op<C::kind>::fromFloat(C::fp8 ? mp_round_e4m3(p * 256.0f) : p);
}

// The A fragment of a 16x16 block of C fragments c0 (columns 0..7) and c1
// (columns 8..15), each element rounded to the operand kind: how a product's
// result becomes the next product's left operand without leaving registers.
template <class C>
__device__ __forceinline__ void accToA(typename Op<C::kind>::pair a[4], const float c0[4],
                                       const float c1[4]) {
  typedef Op<C::kind> O;
  a[0] = O::pack(O::fromFloat(c0[0]), O::fromFloat(c0[1]));
  a[1] = O::pack(O::fromFloat(c0[2]), O::fromFloat(c0[3]));
  a[2] = O::pack(O::fromFloat(c1[0]), O::fromFloat(c1[1]));
  a[3] = O::pack(O::fromFloat(c1[2]), O::fromFloat(c1[3]));
}

// The A fragment of rows g, g + 8 and columns 16 kk + (2t, 2t + 1, 2t + 8,
// 2t + 9) of a row-major operand tile in shared memory (leading dim ld).
template <class C>
__device__ __forceinline__ void sharedA(typename Op<C::kind>::pair a[4],
                                        const typename Op<C::kind>::elem *s, int ld, int kk) {
  typedef Op<C::kind> O;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const typename O::elem *p = s + g * ld + kk * 16 + 2 * t;
  a[0] = O::load(p);
  a[1] = O::load(p + 8 * ld);
  a[2] = O::load(p + 8);
  a[3] = O::load(p + 8 * ld + 8);
}

// Sum over the 4 lanes of a quad (the lanes holding one row of a C fragment).
__device__ __forceinline__ float quadSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
__device__ __forceinline__ float quadMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

// Shapes of the tiles. FP32 operands take twice the bytes and their
// shuffled products need more registers, so their tiles are smaller: they
// stay in 48 KB of static shared memory and in registers without spills.
template <class C> struct Tiles {
  static constexpr int kPad = C::kind == 2 ? 4 : 8; // 16 bytes: no bank conflicts in fragment loads
  static constexpr int kLdK = C::D + kPad, kLdV = C::Dv + kPad;
  // FP32 keeps the A operands Q (and dO) in shared memory, the others in
  // registers.
  static constexpr bool kQueryOperandsShared = C::kind == 2;
  // Forward: kFwdWarps warps of 16 query rows per block, key tiles of
  // kFwdKeys.
  static constexpr int kFwdWarps = C::kind == 2 ? 2 : 4;
  static constexpr int kFwdRows = 16 * kFwdWarps, kFwdKeys = C::kind == 2 ? 16 : 64;
  // Backward: blocks of kWarps warps own 16 * kWarps keys (dK, dV) or
  // query rows (dQ); they walk query tiles of 16 rows or key tiles of
  // kBwdKeys.
  static constexpr int kWarps = C::kind == 2 ? 1 : 4;
  static constexpr int kBlock = 16 * kWarps, kBwdRows = 16, kBwdKeys = C::kind == 2 ? 16 : 32;
  // Loops over head-dim steps whose A operands come from shared memory:
  // unrolled for the tensor cores; rolled for FP32, whose shuffled
  // products, unrolled, are scheduled together and spill.
  static constexpr int kStepUnroll = C::kind == 2 ? 1 : 8;
};

// The forward: one block per (batch, head, kFwdRows query rows), each warp
// 16 rows; the online softmax keeps a running max m and sum l per row and
// rescales the output accumulator by exp(m_old - m_new) when m grows.
template <class C>
__device__ __forceinline__ void forward(const typename C::in_t *__restrict__ q,
                                        const typename C::in_t *__restrict__ k,
                                        const typename C::in_t *__restrict__ v,
                                        const typename C::bias_t *__restrict__ bias,
                                        const float *qScale, const float *kScale,
                                        const float *vScale, typename C::out_t *__restrict__ out,
                                        float *__restrict__ lse) {
  typedef Op<C::kind> O;
  typedef typename O::elem E;
  typedef typename O::pair P2;
  typedef Tiles<C> T;
  constexpr int BN = T::kFwdKeys, KD = C::D / 16, NT = BN / 8, NV = C::Dv / 8;
  constexpr long long nQB = (C::Sq + T::kFwdRows - 1) / T::kFwdRows;
  __shared__ __align__(16) E sK[BN * T::kLdK];
  __shared__ __align__(16) E sVt[C::Dv * (BN + T::kPad)];
  __shared__ __align__(16) E sQ[T::kQueryOperandsShared ? T::kFwdRows * T::kLdK : 8];
  const long long bh = blockIdx.x / nQB, qb = blockIdx.x % nQB;
  const long long b = bh / C::H, h = bh % C::H;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long row0 = qb * T::kFwdRows + warp * 16;
  const float scaleQK = C::descales ? C::scale * *qScale * *kScale : C::scale;
  const float outScale = (C::descales ? *vScale : 1.0f) * (C::fp8 ? 1.0f / 256.0f : 1.0f);
  long long kEnd = C::Sk;
  if (C::causal && qb * T::kFwdRows + T::kFwdRows + (C::Sk - C::Sq) < kEnd)
    kEnd = qb * T::kFwdRows + T::kFwdRows + (C::Sk - C::Sq); // past the last key a row sees

  P2 qf[T::kQueryOperandsShared ? 1 : KD][4];
  if constexpr (T::kQueryOperandsShared) // ordered by the loop's first barrier
    loadTile<C, T::kFwdRows, C::D, T::kLdK, false>(sQ, q + bh * C::Sq * C::D,
                                                   qb * T::kFwdRows, C::Sq);
  else
    loadRowsA<C, C::D>(qf, q + bh * C::Sq * C::D, row0, C::Sq);
  float o[NV][4];
#pragma unroll
  for (int nv = 0; nv < NV; ++nv)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      o[nv][c] = 0.0f;
  float m[2] = {MP_NEG_INF, MP_NEG_INF}, l[2] = {0.0f, 0.0f};

  for (long long k0 = 0; k0 < kEnd; k0 += BN) {
    __syncthreads(); // the previous tile is consumed
    loadTile<C, BN, C::D, T::kLdK, false>(sK, k + bh * C::Sk * C::D, k0, C::Sk);
    loadTile<C, BN, C::Dv, BN + T::kPad, true>(sVt, v + bh * C::Sk * C::Dv, k0, C::Sk);
    __syncthreads();
    float s[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        s[nt][c] = 0.0f;
#pragma unroll T::kStepUnroll
    for (int kk = 0; kk < KD; ++kk) {
      if constexpr (T::kQueryOperandsShared)
        sharedA<C>(qf[0], sQ + warp * 16 * T::kLdK, T::kLdK, kk);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const E *row = sK + (nt * 8 + g) * T::kLdK + kk * 16 + 2 * t;
        const P2 bf[2] = {O::load(row), O::load(row + 8)};
        mma<C::kind>(s[nt], qf[T::kQueryOperandsShared ? 0 : kk], bf);
      }
    }
    float mx[2] = {MP_NEG_INF, MP_NEG_INF};
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        s[nt][c] = score<C>(s[nt][c], scaleQK, bias, b, h, row0 + g + 8 * (c >> 1),
                            k0 + nt * 8 + 2 * t + (c & 1));
        mx[c >> 1] = fmaxf(mx[c >> 1], s[nt][c]);
      }
    float alpha[2], mUse[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float mNew = fmaxf(m[r], quadMax(mx[r]));
      // A row with no key yet keeps p = 0 (exp(-inf - -inf) would be NaN).
      mUse[r] = mNew == MP_NEG_INF ? 0.0f : mNew;
      alpha[r] = expf(m[r] - mUse[r]);
      m[r] = mNew;
      l[r] *= alpha[r];
    }
#pragma unroll
    for (int nv = 0; nv < NV; ++nv)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        o[nv][c] *= alpha[c >> 1];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        s[nt][c] = expf(s[nt][c] - mUse[c >> 1]);
        l[c >> 1] += s[nt][c];
      }
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      P2 a[4];
      a[0] = O::pack(roundP<C>(s[2 * kk][0]), roundP<C>(s[2 * kk][1]));
      a[1] = O::pack(roundP<C>(s[2 * kk][2]), roundP<C>(s[2 * kk][3]));
      a[2] = O::pack(roundP<C>(s[2 * kk + 1][0]), roundP<C>(s[2 * kk + 1][1]));
      a[3] = O::pack(roundP<C>(s[2 * kk + 1][2]), roundP<C>(s[2 * kk + 1][3]));
#pragma unroll
      for (int nv = 0; nv < NV; ++nv) {
        const E *row = sVt + (nv * 8 + g) * (BN + T::kPad) + kk * 16 + 2 * t;
        const P2 bf[2] = {O::load(row), O::load(row + 8)};
        mma<C::kind>(o[nv], a, bf);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r)
    l[r] = quadSum(l[r]);
#pragma unroll
  for (int nv = 0; nv < NV; ++nv)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const long long i = row0 + g + 8 * (c >> 1);
      const float lr = l[c >> 1];
      // l >= 1 unless every key of the row is masked (out 0, lse -inf).
      if (C::writeOut && i < C::Sq)
        C::store(out, (bh * C::Sq + i) * C::Dv + nv * 8 + 2 * t + (c & 1),
                 lr > 0.0f ? o[nv][c] / lr * outScale : 0.0f);
    }
  if (C::writeLse && t == 0)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const long long i = row0 + g + 8 * r;
      if (i < C::Sq)
        lse[bh * C::Sq + i] = l[r] > 0.0f ? m[r] + logf(l[r]) : MP_NEG_INF;
    }
}

// Backward, the blocks owning a key block: dK and dV of 16 * kWarps keys
// (16 per warp, K and V in shared memory), walking the query tiles that
// see them. P^T and dS^T are recomputed per tile in the C fragments of
// S^T = K Q^T (keys as rows), so they are the A operands of
// dV += P^T dO and dK += dS^T Q as they are.
template <class C>
__device__ __forceinline__ void backwardKeys(
    unsigned char *smem, long long bh, long long kb, const typename C::in_t *__restrict__ q,
    const typename C::in_t *__restrict__ k, const typename C::in_t *__restrict__ v,
    const typename C::bias_t *__restrict__ bias, const typename C::out_t *__restrict__ out,
    const float *__restrict__ lse, const typename C::out_t *__restrict__ dout,
    typename C::out_t *__restrict__ dk, typename C::out_t *__restrict__ dv, float scaleQK,
    float dpScale, float dkScale) {
  typedef Op<C::kind> O;
  typedef typename O::elem E;
  typedef typename O::pair P2;
  typedef Tiles<C> T;
  constexpr int BQ = T::kBwdRows, LDK = T::kLdK, LDV = T::kLdV;
  E *sK = reinterpret_cast<E *>(smem);
  E *sV = sK + T::kBlock * LDK;
  E *sQ = sV + T::kBlock * LDV;
  E *sdO = sQ + BQ * LDK;
  float *sLse = reinterpret_cast<float *>(sdO + BQ * LDV);
  float *sDelta = sLse + BQ;
  const long long b = bh / C::H, h = bh % C::H;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long j0 = kb * T::kBlock;
  const int kr = warp * 16; // the warp's keys in sK, sV
  loadTile<C, T::kBlock, C::D, LDK, false>(sK, k + bh * C::Sk * C::D, j0, C::Sk);
  loadTile<C, T::kBlock, C::Dv, LDV, false>(sV, v + bh * C::Sk * C::Dv, j0, C::Sk);
  float dkAcc[C::D / 8][4], dvAcc[C::Dv / 8][4];
#pragma unroll
  for (int n = 0; n < C::D / 8; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      dkAcc[n][c] = 0.0f;
#pragma unroll
  for (int n = 0; n < C::Dv / 8; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      dvAcc[n][c] = 0.0f;
  // Causal: row i sees key j when j <= i + Sk - Sq.
  long long iStart = 0;
  if (C::causal && j0 - (C::Sk - C::Sq) > 0)
    iStart = (j0 - (C::Sk - C::Sq)) / BQ * BQ;
  for (long long i0 = iStart; i0 < C::Sq; i0 += BQ) {
    __syncthreads(); // the previous tile is consumed (and sK, sV written)
    loadTile<C, BQ, C::D, LDK, false>(sQ, q + bh * C::Sq * C::D, i0, C::Sq);
    // dO rounds to the operand format here (round_G).
    loadTile<C, BQ, C::Dv, LDV, false>(sdO, dout + bh * C::Sq * C::Dv, i0, C::Sq);
    {
      // D[i] from dOut as given, each row's sum split over TPR
      // consecutive lanes.
      constexpr int TPR = T::kWarps * 32 / BQ;
      const int r = threadIdx.x / TPR, part = threadIdx.x % TPR;
      const long long i = i0 + r;
      float delta = 0.0f;
      if (i < C::Sq)
        for (int e = part; e < C::Dv; e += TPR)
          delta = __fmaf_rn(C::load(dout, (bh * C::Sq + i) * C::Dv + e),
                            C::load(out, (bh * C::Sq + i) * C::Dv + e), delta);
#pragma unroll
      for (int o = TPR / 2; o > 0; o >>= 1)
        delta += __shfl_xor_sync(0xffffffffu, delta, o);
      if (part == 0) {
        sLse[r] = i < C::Sq ? lse[bh * C::Sq + i] : MP_NEG_INF;
        sDelta[r] = delta;
      }
    }
    __syncthreads();
    float st[2][4], dpt[2][4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        st[nt][c] = dpt[nt][c] = 0.0f;
#pragma unroll T::kStepUnroll
    for (int kk = 0; kk < C::D / 16; ++kk) {
      P2 a[4];
      sharedA<C>(a, sK + kr * LDK, LDK, kk);
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const E *qRow = sQ + (nt * 8 + g) * LDK + kk * 16 + 2 * t;
        const P2 bf[2] = {O::load(qRow), O::load(qRow + 8)};
        mma<C::kind>(st[nt], a, bf);
      }
    }
#pragma unroll T::kStepUnroll
    for (int kv = 0; kv < C::Dv / 16; ++kv) {
      P2 a[4];
      sharedA<C>(a, sV + kr * LDV, LDV, kv);
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const E *gb = sdO + (nt * 8 + g) * LDV + kv * 16 + 2 * t;
        const P2 bf[2] = {O::load(gb), O::load(gb + 8)};
        mma<C::kind>(dpt[nt], a, bf);
      }
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int col = nt * 8 + 2 * t + (c & 1);
        const float x = score<C>(st[nt][c], scaleQK, bias, b, h, i0 + col,
                                 j0 + kr + g + 8 * (c >> 1));
        const float p =
            x == MP_NEG_INF || sLse[col] == MP_NEG_INF ? 0.0f : expf(x - sLse[col]);
        st[nt][c] = p;
        dpt[nt][c] = p * (dpt[nt][c] * dpScale - sDelta[col]);
      }
    P2 a[4];
    accToA<C>(a, st[0], st[1]);
#pragma unroll
    for (int nv = 0; nv < C::Dv / 8; ++nv) {
      const E *gc = sdO + 2 * t * LDV + nv * 8 + g; // dO[2t][nv * 8 + g]
      const P2 bf[2] = {O::pack(gc[0], gc[LDV]), O::pack(gc[8 * LDV], gc[9 * LDV])};
      mma<C::kind>(dvAcc[nv], a, bf);
    }
    accToA<C>(a, dpt[0], dpt[1]);
#pragma unroll
    for (int nd = 0; nd < C::D / 8; ++nd) {
      const E *qc = sQ + 2 * t * LDK + nd * 8 + g; // Q[2t][nd * 8 + g]
      const P2 bf[2] = {O::pack(qc[0], qc[LDK]), O::pack(qc[8 * LDK], qc[9 * LDK])};
      mma<C::kind>(dkAcc[nd], a, bf);
    }
  }
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const long long j = j0 + kr + g + 8 * (c >> 1);
    if (j >= C::Sk)
      continue;
    if (C::writeDk)
#pragma unroll
      for (int nd = 0; nd < C::D / 8; ++nd)
        C::store(dk, (bh * C::Sk + j) * C::D + nd * 8 + 2 * t + (c & 1), dkAcc[nd][c] * dkScale);
    if (C::writeDv)
#pragma unroll
      for (int nv = 0; nv < C::Dv / 8; ++nv)
        C::store(dv, (bh * C::Sk + j) * C::Dv + nv * 8 + 2 * t + (c & 1), dvAcc[nv][c]);
  }
}

// Backward, the blocks owning a query block: dQ of 16 * kWarps rows (Q and
// dO in registers as A fragments), walking the key tiles they see.
template <class C>
__device__ __forceinline__ void backwardQueries(
    unsigned char *smem, long long bh, long long qb, const typename C::in_t *__restrict__ q,
    const typename C::in_t *__restrict__ k, const typename C::in_t *__restrict__ v,
    const typename C::bias_t *__restrict__ bias, const typename C::out_t *__restrict__ out,
    const float *__restrict__ lse, const typename C::out_t *__restrict__ dout,
    typename C::out_t *__restrict__ dq, float scaleQK, float dpScale, float dqScale) {
  typedef Op<C::kind> O;
  typedef typename O::elem E;
  typedef typename O::pair P2;
  typedef Tiles<C> T;
  constexpr int BK = T::kBwdKeys, LDK = T::kLdK, LDV = T::kLdV;
  E *sK = reinterpret_cast<E *>(smem);
  E *sV = sK + BK * LDK;
  E *sQ = sV + BK * LDV; // kQueryOperandsShared: Q, dO of the block's rows
  E *sdO = sQ + T::kBlock * LDK;
  const long long b = bh / C::H, h = bh % C::H;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long r0 = qb * T::kBlock + warp * 16;
  // Q and round_G(dO) as A operands: in registers, or in shared memory.
  constexpr int QF = T::kQueryOperandsShared ? 1 : C::D / 16;
  constexpr int GF = T::kQueryOperandsShared ? 1 : C::Dv / 16;
  P2 qf[QF][4], gf[GF][4];
  if constexpr (T::kQueryOperandsShared) {
    loadTile<C, T::kBlock, C::D, LDK, false>(sQ, q + bh * C::Sq * C::D, qb * T::kBlock, C::Sq);
    loadTile<C, T::kBlock, C::Dv, LDV, false>(sdO, dout + bh * C::Sq * C::Dv, qb * T::kBlock,
                                              C::Sq);
  } else {
    loadRowsA<C, C::D>(qf, q + bh * C::Sq * C::D, r0, C::Sq);
    loadRowsA<C, C::Dv>(gf, dout + bh * C::Sq * C::Dv, r0, C::Sq);
  }
  float lv[2], delta[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const long long i = r0 + g + 8 * r;
    float part = 0.0f; // this lane's columns of D[i], then the quad's sum
    lv[r] = MP_NEG_INF;
    if (i < C::Sq) {
      lv[r] = lse[bh * C::Sq + i];
#pragma unroll
      for (int kv = 0; kv < C::Dv / 16; ++kv)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const long long at = (bh * C::Sq + i) * C::Dv + kv * 16 + 2 * t + (x & 1) + 8 * (x >> 1);
          part = __fmaf_rn(C::load(dout, at), C::load(out, at), part);
        }
    }
    delta[r] = quadSum(part);
  }
  float dqAcc[C::D / 8][4];
#pragma unroll
  for (int n = 0; n < C::D / 8; ++n)
#pragma unroll
    for (int c = 0; c < 4; ++c)
      dqAcc[n][c] = 0.0f;
  long long kEnd = C::Sk;
  if (C::causal && qb * T::kBlock + T::kBlock + (C::Sk - C::Sq) < kEnd)
    kEnd = qb * T::kBlock + T::kBlock + (C::Sk - C::Sq);
  for (long long k0 = 0; k0 < kEnd; k0 += BK) {
    __syncthreads();
    loadTile<C, BK, C::D, LDK, false>(sK, k + bh * C::Sk * C::D, k0, C::Sk);
    loadTile<C, BK, C::Dv, LDV, false>(sV, v + bh * C::Sk * C::Dv, k0, C::Sk);
    __syncthreads();
    float s[BK / 8][4], dp[BK / 8][4];
#pragma unroll
    for (int nt = 0; nt < BK / 8; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        s[nt][c] = dp[nt][c] = 0.0f;
#pragma unroll T::kStepUnroll
    for (int kk = 0; kk < C::D / 16; ++kk) {
      if constexpr (T::kQueryOperandsShared)
        sharedA<C>(qf[0], sQ + warp * 16 * LDK, LDK, kk);
#pragma unroll
      for (int nt = 0; nt < BK / 8; ++nt) {
        const E *kRow = sK + (nt * 8 + g) * LDK + kk * 16 + 2 * t;
        const P2 bf[2] = {O::load(kRow), O::load(kRow + 8)};
        mma<C::kind>(s[nt], qf[T::kQueryOperandsShared ? 0 : kk], bf);
      }
    }
#pragma unroll T::kStepUnroll
    for (int kv = 0; kv < C::Dv / 16; ++kv) {
      if constexpr (T::kQueryOperandsShared)
        sharedA<C>(gf[0], sdO + warp * 16 * LDV, LDV, kv);
#pragma unroll
      for (int nt = 0; nt < BK / 8; ++nt) {
        const E *vb = sV + (nt * 8 + g) * LDV + kv * 16 + 2 * t;
        const P2 bf[2] = {O::load(vb), O::load(vb + 8)};
        mma<C::kind>(dp[nt], gf[T::kQueryOperandsShared ? 0 : kv], bf);
      }
    }
#pragma unroll
    for (int nt = 0; nt < BK / 8; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = c >> 1;
        const float x = score<C>(s[nt][c], scaleQK, bias, b, h, r0 + g + 8 * r,
                                 k0 + nt * 8 + 2 * t + (c & 1));
        const float p = x == MP_NEG_INF || lv[r] == MP_NEG_INF ? 0.0f : expf(x - lv[r]);
        s[nt][c] = p * (dp[nt][c] * dpScale - delta[r]); // dS
      }
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      P2 a[4];
      accToA<C>(a, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
      for (int nd = 0; nd < C::D / 8; ++nd) {
        const E *kc = sK + (kk * 16 + 2 * t) * LDK + nd * 8 + g; // K[2t][nd * 8 + g]
        const P2 bf[2] = {O::pack(kc[0], kc[LDK]), O::pack(kc[8 * LDK], kc[9 * LDK])};
        mma<C::kind>(dqAcc[nd], a, bf);
      }
    }
  }
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const long long i = r0 + g + 8 * (c >> 1);
    if (C::writeDq && i < C::Sq)
#pragma unroll
      for (int nd = 0; nd < C::D / 8; ++nd)
        C::store(dq, (bh * C::Sq + i) * C::D + nd * 8 + 2 * t + (c & 1), dqAcc[nd][c] * dqScale);
  }
}

// The backward: one launch, deterministic (every output element is written
// by the one block owning it, no atomics). Per (batch, head), blocks
// 0 .. nKB - 1 own key blocks, the next nQB query blocks.
template <class C>
__device__ __forceinline__ void backward(
    const typename C::in_t *__restrict__ q, const typename C::in_t *__restrict__ k,
    const typename C::in_t *__restrict__ v, const typename C::bias_t *__restrict__ bias,
    const float *qScale, const float *kScale, const float *vScale,
    const typename C::out_t *__restrict__ out, const float *__restrict__ lse,
    const typename C::out_t *__restrict__ dout, typename C::out_t *__restrict__ dq,
    typename C::out_t *__restrict__ dk, typename C::out_t *__restrict__ dv) {
  typedef Tiles<C> T;
  typedef typename Op<C::kind>::elem E;
  constexpr long long nKB = (C::Sk + T::kBlock - 1) / T::kBlock;
  constexpr long long nQB = (C::Sq + T::kBlock - 1) / T::kBlock;
  // One buffer for both roles (separate __shared__ arrays would add up):
  // K, V, a query tile of Q, dO, and its lse and D; or a key tile of K, V.
  constexpr int keyBytes =
      (T::kBlock + T::kBwdRows) * (T::kLdK + T::kLdV) * (int)sizeof(E) + 2 * T::kBwdRows * 4;
  constexpr int queryBytes =
      (T::kBwdKeys + (T::kQueryOperandsShared ? T::kBlock : 0)) * (T::kLdK + T::kLdV) *
      (int)sizeof(E);
  __shared__ __align__(16) unsigned char smem[keyBytes > queryBytes ? keyBytes : queryBytes];
  const long long bh = blockIdx.x / (nKB + nQB), role = blockIdx.x % (nKB + nQB);
  const float qs = C::descales ? *qScale : 1.0f, ks = C::descales ? *kScale : 1.0f;
  const float scaleQK = C::descales ? C::scale * qs * ks : C::scale;
  const float dpScale = C::descales ? *vScale : 1.0f;
  // A routine call that writes some of the gradients launches every block;
  // the blocks whose results it does not write have nothing to do.
  if (role < nKB ? !(C::writeDk || C::writeDv) : !C::writeDq)
    return;
  if (role < nKB)
    backwardKeys<C>(smem, bh, role, q, k, v, bias, out, lse, dout, dk, dv, scaleQK, dpScale,
                    C::scale * qs);
  else
    backwardQueries<C>(smem, bh, role - nKB, q, k, v, bias, out, lse, dout, dq, scaleQK,
                       dpScale, C::scale * ks);
}

} // namespace mp_attn
#endif // MP_ATTENTION_COMMON
)MPATTN";

bool isFp8(mlir::Type t) { return t && mlir::isa<mlir::Float8E4M3FNType>(t); }

bool isFloat(mlir::Type t) { return t && (t.isF32() || t.isBF16() || t.isF16()); }

/// The operand kind of the device code: 0 BF16 (and FP8 widened), 1 FP16,
/// 2 FP32.
int operandKind(mlir::Type t) { return t.isF16() ? 1 : t.isF32() ? 2 : 0; }

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Blocks per (batch, head) of the forward, and of the backward.
int64_t forwardBlocks(const AttentionKernelSpec &s) {
  return ceilDiv(s.seqQ, s.operandType.isF32() ? 32 : 64);
}

/// Threads per block (Tiles<C> in the device code says why).
int64_t blockThreads(const AttentionKernelSpec &s, bool backward) {
  if (!s.operandType.isF32())
    return 128;
  return backward ? 32 : 64;
}
int64_t backwardBlocks(const AttentionKernelSpec &s) {
  const int64_t rows = s.operandType.isF32() ? 16 : 64;
  return ceilDiv(s.seqK, rows) + ceilDiv(s.seqQ, rows);
}

/// `x` as an exact C float literal (hexadecimal).
std::string floatLiteral(float x) {
  char text[64];
  std::snprintf(text, sizeof(text), "%af", static_cast<double>(x));
  return text;
}

/// The configuration namespace and the kernel's signature up to the
/// outputs; `backward` adds out, lse, dout and the three gradients.
std::string printKernel(const AttentionKernelSpec &s, const std::string &name, bool backward) {
  const DTypeInfo in = *dtypeInfo(s.operandType), out = *dtypeInfo(s.outType);
  const DTypeInfo bias = s.hasBias ? *dtypeInfo(s.biasType) : DTypeInfo{"float", "f32"};
  std::ostringstream os;
  os << kCommon;
  os << "// mp.attention " << (backward ? "backward" : "forward") << " " << name << ": B "
     << s.batch << ", H " << s.heads << ", Sq " << s.seqQ << ", Sk " << s.seqK << ", D "
     << s.headDim << ", Dv " << s.valueDim << (s.causal ? ", causal" : "")
     << (s.hasBias ? ", bias" : "") << "\n";
  os << "namespace mp_attn_cfg_" << name << " {\nstruct Cfg {\n";
  os << "  typedef " << in.ctype << " in_t;\n  typedef " << out.ctype << " out_t;\n  typedef "
     << bias.ctype << " bias_t;\n";
  os << "  static constexpr int kind = " << operandKind(s.operandType) << ";\n";
  os << "  static constexpr bool fp8 = " << (isFp8(s.operandType) ? "true" : "false")
     << ", descales = " << (s.fp8Descales ? "true" : "false")
     << ", causal = " << (s.causal ? "true" : "false")
     << ", hasBias = " << (s.hasBias ? "true" : "false") << ";\n";
  const auto writes = [&](unsigned bit) { return (s.writes & bit) ? "true" : "false"; };
  os << "  static constexpr bool writeOut = " << writes(kWriteOut)
     << ", writeLse = " << writes(kWriteLse) << ", writeDq = " << writes(kWriteDq)
     << ", writeDk = " << writes(kWriteDk) << ", writeDv = " << writes(kWriteDv) << ";\n";
  os << "  static constexpr long long H = " << s.heads << ", Sq = " << s.seqQ << ", Sk = " << s.seqK
     << ";\n";
  os << "  static constexpr int D = " << s.headDim << ", Dv = " << s.valueDim << ";\n";
  const auto &st = s.biasStrides;
  os << "  static constexpr long long bs0 = " << (s.hasBias ? st[0] : 0)
     << ", bs1 = " << (s.hasBias ? st[1] : 0) << ", bs2 = " << (s.hasBias ? st[2] : 0)
     << ", bs3 = " << (s.hasBias ? st[3] : 0) << ";\n";
  os << "  static constexpr float scale = " << floatLiteral(static_cast<float>(s.scale)) << ";\n";
  // One load per distinct C type (FP8 and the other types differ in C).
  std::set<std::string> loaded;
  for (const DTypeInfo &t : {in, out, bias}) {
    if (!loaded.insert(t.ctype).second)
      continue;
    os << "  static __device__ __forceinline__ float load(const " << t.ctype
       << " *p, long long i) { return mp_load_" << t.suffix << "(p, i); }\n";
  }
  os << "  static __device__ __forceinline__ void store(" << out.ctype
     << " *p, long long i, float x) { mp_store_" << out.suffix << "(p, i, x); }\n";
  os << "};\n} // namespace mp_attn_cfg_" << name << "\n";
  os << "extern \"C\" __global__ void __launch_bounds__(" << blockThreads(s, backward) << ") "
     << name << "(";
  // Parameters: the inputs, then the outputs the kernel writes (every one
  // unless `writes` says otherwise; an output not written is null inside).
  const std::string inT = in.ctype, outT = out.ctype;
  os << "const " << inT << " *__restrict__ q, const " << inT << " *__restrict__ k, const " << inT
     << " *__restrict__ v";
  const bool biasLast = backward && s.biasAfterGradInputs;
  auto printBias = [&] {
    if (s.hasBias)
      os << ", const " << bias.ctype << " *__restrict__ bias";
    if (s.fp8Descales)
      os << ", const float *q_descale, const float *k_descale, const float *v_descale";
  };
  if (!biasLast)
    printBias();
  std::string body;
  auto output = [&](const std::string &type, const char *param, unsigned bit) {
    if (s.writes & bit)
      os << ", " << type << " *__restrict__ " << param;
    else
      body += "  " + type + " *" + param + " = nullptr;\n";
  };
  if (!backward) {
    output(outT, "out", kWriteOut);
    output("float", "lse", kWriteLse);
  } else {
    os << ", const " << outT << " *__restrict__ out, const float *__restrict__ lse, const " << outT
       << " *__restrict__ dout";
    if (biasLast)
      printBias();
    output(outT, "dq", kWriteDq);
    output(outT, "dk", kWriteDk);
    output(outT, "dv", kWriteDv);
  }
  os << ") {\n" << body;
  os << "  typedef mp_attn_cfg_" << name << "::Cfg C;\n";
  os << "  mp_attn::" << (backward ? "backward" : "forward") << "<C>(q, k, v, "
     << (s.hasBias ? "bias" : "(const float *)nullptr") << ", "
     << (s.fp8Descales ? "q_descale, k_descale, v_descale"
                       : "(const float *)nullptr, (const float *)nullptr, (const float *)nullptr")
     << (backward ? ", out, lse, dout, dq, dk, dv);\n" : ", out, lse);\n");
  os << "}\n";
  return os.str();
}

std::optional<CudaKernel> emit(const AttentionKernelSpec &spec, const std::string &name,
                               std::string *why, bool backward) {
  std::string problem = attentionKernelUnsupported(spec);
  if (problem.empty() && cudaIdentifier(name) != name)
    problem = "the kernel name '" + name + "' is not a C identifier";
  if (!problem.empty()) {
    if (why)
      *why = problem;
    return std::nullopt;
  }
  CudaKernel kernel;
  kernel.name = name;
  kernel.source = printKernel(spec, name, backward);
  kernel.launch.blockSize = blockThreads(spec, backward);
  kernel.launch.gridSize =
      spec.batch * spec.heads * (backward ? backwardBlocks(spec) : forwardBlocks(spec));
  return kernel;
}

} // namespace

std::string attentionKernelUnsupported(const AttentionKernelSpec &s) {
  if (!s.operandType || !(isFloat(s.operandType) || isFp8(s.operandType)))
    return "attention operands must be f32, bf16, f16 or f8E4M3FN";
  if (!isFloat(s.outType))
    return "the attention output must be f32, bf16 or f16";
  if (s.hasBias && !isFloat(s.biasType))
    return "the attention bias must be f32, bf16 or f16";
  if (s.fp8Descales && !isFp8(s.operandType))
    return "descales need f8E4M3FN operands";
  for (int64_t dim : {s.headDim, s.valueDim})
    if (dim < 16 || dim > 128 || dim % 16 != 0)
      return "attention head dims must be multiples of 16 from 16 to 128, got " +
             std::to_string(s.headDim) + " and " + std::to_string(s.valueDim);
  if (s.batch < 1 || s.heads < 1 || s.seqQ < 1 || s.seqK < 1)
    return "attention extents must be positive";
  if (!std::isfinite(s.scale) || !std::isfinite(static_cast<float>(s.scale)))
    return "the attention scale must be a finite FP32 value";
  const int64_t limit = std::numeric_limits<int32_t>::max();
  if (s.batch * s.heads > limit / std::max(forwardBlocks(s), backwardBlocks(s)))
    return "the attention grid would exceed 2^31 - 1 blocks";
  return "";
}

std::optional<CudaKernel> emitAttentionForward(const AttentionKernelSpec &spec,
                                               const std::string &name, std::string *why) {
  return emit(spec, name, why, false);
}

std::optional<CudaKernel> emitAttentionBackward(const AttentionKernelSpec &spec,
                                                const std::string &name, std::string *why) {
  return emit(spec, name, why, true);
}

} // namespace mixprec::codegen
