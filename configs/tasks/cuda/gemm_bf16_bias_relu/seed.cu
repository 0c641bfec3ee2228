// kevo:params begin
#define MMA_fma 1
#define MMA "fma"
#define BM 64
#define BN 64
#define BK 16
#define WM 32
#define WN 32
#define VEC 1
#define STAGES 1
// kevo:params end
// Y = relu(A @ B + bias) in bf16 with fp32 accumulation, block tiling through
// shared memory. A block computes a BM x BN tile of Y with (BM/WM) x (BN/WN)
// warps, each warp a WM x WN tile:
//   MMA     "fma": CUDA cores; a warp's lanes form 4 x 8 threads, each a
//           (WM/4) x (WN/8) micro-tile of fp32 accumulators in registers;
//           "wmma": tensor cores (nvcuda::wmma 16x16x16 bf16 fragments,
//           fp32 accumulators), (WM/16) x (WN/16) fragments per warp
//   BK      the K extent of one shared-memory tile of A (BM x BK) and B (BK x BN)
//   VEC     bf16 elements per global load: 1, or 8 (one 16-byte load where
//           the 8 elements are in range and 16-byte aligned, else one by one)
//   STAGES  shared-memory buffers: 1, or 2 (the next tile is stored into the
//           other buffer while this one is used: one barrier per tile)
// The next tile is always prefetched into registers before the current one is
// multiplied. Every global load and store is bounds-checked (zero fill), so
// any M, N, K works.
#include <cstdint>
#include <cuda_bf16.h>
#include <mma.h>

constexpr int kWarps = (BM / WM) * (BN / WN);
constexpr int kThreads = kWarps * 32;
// Rows padded by 8 elements (16 bytes): fewer bank conflicts, and the row
// pitch stays a multiple of 8 elements (32 bytes per 16 rows), as wmma loads need.
constexpr int kLdA = BK + 8;   // As[m][k]
constexpr int kLdB = BN + 8;   // Bs[k][n]
constexpr int kTileA = BM * kLdA, kTileB = BK * kLdB;
constexpr int kTileBytes = STAGES * (kTileA + kTileB) * 2;
constexpr int kEpilogueBytes = kWarps * 16 * 16 * 4;   // wmma: one 16x16 fp32 tile per warp
constexpr int kSmemBytes = kTileBytes > kEpilogueBytes ? kTileBytes : kEpilogueBytes;

// VEC consecutive bf16 values, moved as one register-sized unit.
template <int V> struct alignas(2 * V) Pack { __nv_bfloat16 v[V]; };

constexpr int kVecsA = BM * BK / VEC, kItersA = (kVecsA + kThreads - 1) / kThreads;
constexpr int kVecsB = BK * BN / VEC, kItersB = (kVecsB + kThreads - 1) / kThreads;

// Loads X[r][c .. c+VEC) of a rows x cols row-major matrix, zero outside it.
__device__ __forceinline__ Pack<VEC> load_pack(const __nv_bfloat16* __restrict__ X, int rows, int cols, int r, int c) {
  Pack<VEC> p;
  const __nv_bfloat16 zero = __float2bfloat16(0.0f);
  if (r >= rows) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) p.v[i] = zero;
    return p;
  }
  const __nv_bfloat16* src = X + (long long)r * cols + c;
  if (VEC > 1 && c + VEC <= cols && (reinterpret_cast<uintptr_t>(src) % sizeof(Pack<VEC>)) == 0) {
    p = *reinterpret_cast<const Pack<VEC>*>(src);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) p.v[i] = c + i < cols ? src[i] : zero;
  }
  return p;
}

__global__ void __launch_bounds__(kThreads)
    gemm_bf16_bias_relu_kernel(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B,
                               const __nv_bfloat16* __restrict__ bias, __nv_bfloat16* __restrict__ Y, int M, int N,
                               int K) {
  __shared__ __align__(128) unsigned char smem[kSmemBytes];
  __nv_bfloat16* const As = reinterpret_cast<__nv_bfloat16*>(smem);          // [STAGES][BM][kLdA]
  __nv_bfloat16* const Bs = As + STAGES * kTileA;                            // [STAGES][BK][kLdB]
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int wm0 = (warp / (BN / WN)) * WM, wn0 = (warp % (BN / WN)) * WN;   // the warp's tile in the block tile

  Pack<VEC> ra[kItersA], rb[kItersB];
  auto fetch = [&](int k0) {
#pragma unroll
    for (int it = 0; it < kItersA; ++it) {
      const int e = tid + it * kThreads;
      if (e < kVecsA) ra[it] = load_pack(A, M, K, row0 + e / (BK / VEC), k0 + (e % (BK / VEC)) * VEC);
    }
#pragma unroll
    for (int it = 0; it < kItersB; ++it) {
      const int e = tid + it * kThreads;
      if (e < kVecsB) rb[it] = load_pack(B, K, N, k0 + e / (BN / VEC), col0 + (e % (BN / VEC)) * VEC);
    }
  };
  auto stash = [&](int stage) {
#pragma unroll
    for (int it = 0; it < kItersA; ++it) {
      const int e = tid + it * kThreads;
      if (e < kVecsA)
        *reinterpret_cast<Pack<VEC>*>(As + stage * kTileA + (e / (BK / VEC)) * kLdA + (e % (BK / VEC)) * VEC) = ra[it];
    }
#pragma unroll
    for (int it = 0; it < kItersB; ++it) {
      const int e = tid + it * kThreads;
      if (e < kVecsB)
        *reinterpret_cast<Pack<VEC>*>(Bs + stage * kTileB + (e / (BN / VEC)) * kLdB + (e % (BN / VEC)) * VEC) = rb[it];
    }
  };

#if defined(MMA_wmma)
  using namespace nvcuda;
  constexpr int FM = WM / 16, FN = WN / 16;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  auto multiply = [&](int stage) {
    const __nv_bfloat16* as = As + stage * kTileA;
    const __nv_bfloat16* bs = Bs + stage * kTileB;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(a[i], as + (wm0 + i * 16) * kLdA + kk, kLdA);
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(b[j], bs + kk * kLdB + wn0 + j * 16, kLdB);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
  };
#else
  constexpr int TM = WM / 4, TN = WN / 8;
  const int tr = wm0 + (lane / 8) * TM, tc = wn0 + (lane % 8) * TN;   // the thread's micro-tile
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  auto multiply = [&](int stage) {
    const __nv_bfloat16* as = As + stage * kTileA;
    const __nv_bfloat16* bs = Bs + stage * kTileB;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = __bfloat162float(as[(tr + i) * kLdA + k]);
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = __bfloat162float(bs[k * kLdB + tc + j]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  };
#endif

  const int tiles = (K + BK - 1) / BK;
  fetch(0);
  stash(0);
  __syncthreads();
  for (int t = 0; t < tiles; ++t) {
    const bool more = t + 1 < tiles;
    if (more) fetch((t + 1) * BK);   // global loads in flight during the multiply
    if (STAGES == 2) {
      // The other buffer was last read in iteration t-1, before its barrier.
      multiply(t & 1);
      if (more) stash((t + 1) & 1);
      __syncthreads();
    } else {
      multiply(0);
      __syncthreads();
      if (more) {
        stash(0);
        __syncthreads();
      }
    }
  }

#if defined(MMA_wmma)
  // The fragment layout is opaque: each warp stages one 16x16 fp32 tile at a
  // time in shared memory (the A/B tiles are no longer read: the loop ended
  // on a barrier), then its lanes add the bias, apply ReLU and store bf16.
  float* const stage_out = reinterpret_cast<float*>(smem) + warp * 256;
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      wmma::store_matrix_sync(stage_out, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        const int gi = row0 + wm0 + i * 16 + e / 16, gj = col0 + wn0 + j * 16 + e % 16;
        if (gi < M && gj < N)
          Y[(long long)gi * N + gj] = __float2bfloat16_rn(fmaxf(stage_out[e] + __bfloat162float(bias[gj]), 0.0f));
      }
      __syncwarp();
    }
#else
#pragma unroll
  for (int j = 0; j < TN; ++j) {
    const int gj = col0 + tc + j;
    if (gj >= N) continue;
    const float bj = __bfloat162float(bias[gj]);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int gi = row0 + tr + i;
      if (gi < M) Y[(long long)gi * N + gj] = __float2bfloat16_rn(fmaxf(acc[i][j] + bj, 0.0f));
    }
  }
#endif
}

extern "C" void gemm_bf16_bias_relu(const __nv_bfloat16* A, const __nv_bfloat16* B, const __nv_bfloat16* bias,
                                    __nv_bfloat16* Y, int32_t M, int32_t N, int32_t K) {
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  gemm_bf16_bias_relu_kernel<<<grid, kThreads>>>(A, B, bias, Y, M, N, K);
}
