// kevo:params begin
#define BLOCK 128
#define GRID_PER_SM 1
#define VEC 1
// kevo:params end
// Sum: a grid of GRID_PER_SM blocks per SM strides over x (VEC-wide loads
// when VEC == 4), each block reduces through warp shuffles and writes one
// partial; a second one-block launch sums the partials into out[0].
#include <cstdint>

__device__ float block_sum(float v) {
  __shared__ float shared[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  v = 0.0f;
  for (int k = 0; k < (BLOCK + 31) / 32; ++k) v += shared[k];
  return v;
}

__global__ void __launch_bounds__(BLOCK) partial_sums(const float* __restrict__ x, float* __restrict__ part, int n) {
  float s = 0.0f;
  const long long stride = (long long)gridDim.x * BLOCK;
  const long long t = (long long)blockIdx.x * BLOCK + threadIdx.x;
  if (VEC == 4) {
    const long long nv = n / 4;
    for (long long i = t; i < nv; i += stride) {
      const float4 v = reinterpret_cast<const float4*>(x)[i];
      s += (v.x + v.y) + (v.z + v.w);
    }
    for (long long i = nv * 4 + t; i < n; i += stride) s += x[i];
  } else {
    for (long long i = t; i < n; i += stride) s += x[i];
  }
  s = block_sum(s);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void __launch_bounds__(BLOCK) final_sum(const float* __restrict__ part, float* __restrict__ out, int m) {
  float s = 0.0f;
  for (int i = threadIdx.x; i < m; i += BLOCK) s += part[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *out = s;
}

extern "C" void reduce_sum(const float* x, float* out, int32_t N) {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int blocks = sms * GRID_PER_SM;
  float* part = nullptr;
  cudaMallocAsync(&part, blocks * sizeof(float), 0);
  partial_sums<<<blocks, BLOCK>>>(x, part, N);
  final_sum<<<1, BLOCK>>>(part, out, blocks);
  cudaFreeAsync(part, 0);
}
