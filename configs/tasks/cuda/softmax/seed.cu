// kevo:params begin
#define BLOCK 32
#define EXP_expf 1
#define EXP "expf"
#define PASSES_three 1
#define PASSES "three"
// kevo:params end
// Row softmax, one block of BLOCK threads per row.
//   EXP     "expf": expf; "fast": __expf
//   PASSES  "three": max, sum, write; "online": one pass keeps a running max
//           and rescales the running sum, then the write pass
#include <cfloat>
#include <cstdint>

#if defined(EXP_fast)
#define EXPF __expf
#else
#define EXPF expf
#endif

// Block-wide reduction through warp shuffles and one shared slot per warp.
template <bool IsMax>
__device__ float block_reduce(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = IsMax ? fmaxf(v, w) : v + w;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = IsMax ? -FLT_MAX : 0.0f;
  for (int k = 0; k < (BLOCK + 31) / 32; ++k) v = IsMax ? fmaxf(v, shared[k]) : v + shared[k];
  return v;
}

__global__ void __launch_bounds__(BLOCK) softmax_kernel(const float* __restrict__ X, float* __restrict__ Y, int C) {
  __shared__ float shared[32];
  const float* x = X + (long long)blockIdx.x * C;
  float* y = Y + (long long)blockIdx.x * C;
#if defined(PASSES_online)
  float m = -FLT_MAX, s = 0.0f;
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    const float v = x[c];
    if (v > m) {
      s = s * EXPF(m - v) + 1.0f;
      m = v;
    } else {
      s += EXPF(v - m);
    }
  }
  const float gm = block_reduce<true>(m, shared);
  s = (m == -FLT_MAX) ? 0.0f : s * EXPF(m - gm);
  const float sum = block_reduce<false>(s, shared);
#else
  float m = -FLT_MAX;
  for (int c = threadIdx.x; c < C; c += BLOCK) m = fmaxf(m, x[c]);
  const float gm = block_reduce<true>(m, shared);
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += BLOCK) s += EXPF(x[c] - gm);
  const float sum = block_reduce<false>(s, shared);
#endif
  const float inv = 1.0f / sum;
  for (int c = threadIdx.x; c < C; c += BLOCK) y[c] = EXPF(x[c] - gm) * inv;
}

extern "C" void softmax(const float* X, float* Y, int32_t R, int32_t C) {
  softmax_kernel<<<R, BLOCK>>>(X, Y, C);
}
