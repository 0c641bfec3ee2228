// kevo:params begin
#define BLOCK 32
#define STATS_twopass 1
#define STATS "twopass"
// kevo:params end
// LayerNorm, one block of BLOCK threads per row.
//   STATS  "twopass": mean, then sum of squared deviations;
//          "welford": one pass of per-thread Welford, merged across the block
#include <cstdint>

__device__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = 0.0f;
  for (int k = 0; k < (BLOCK + 31) / 32; ++k) v += shared[k];
  return v;
}

__global__ void __launch_bounds__(BLOCK) layernorm_kernel(const float* __restrict__ X, const float* __restrict__ gamma,
                                                          const float* __restrict__ beta, float* __restrict__ Y, int C,
                                                          float eps) {
  __shared__ float shared[32];
  const float* x = X + (long long)blockIdx.x * C;
  float* y = Y + (long long)blockIdx.x * C;
#if defined(STATS_welford)
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    const float v = x[c];
    n += 1.0f;
    const float d = v - mean;
    mean += d / n;
    m2 += d * (v - mean);
  }
  // Merge: total mean from the sums, then m2 + n * (mean_i - mean)^2.
  const float gmean = block_sum(n * mean, shared) / C;
  const float dm = mean - gmean;
  const float var = block_sum(m2 + n * dm * dm, shared) / C;
#else
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += BLOCK) s += x[c];
  const float gmean = block_sum(s, shared) / C;
  float q = 0.0f;
  for (int c = threadIdx.x; c < C; c += BLOCK) {
    const float d = x[c] - gmean;
    q += d * d;
  }
  const float var = block_sum(q, shared) / C;
#endif
  const float inv = rsqrtf(var + eps);
  for (int c = threadIdx.x; c < C; c += BLOCK) y[c] = (x[c] - gmean) * inv * gamma[c] + beta[c];
}

extern "C" void layernorm(const float* X, const float* gamma, const float* beta, float* Y, int32_t R, int32_t C,
                          float eps) {
  layernorm_kernel<<<R, BLOCK>>>(X, gamma, beta, Y, C, eps);
}
