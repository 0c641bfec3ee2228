// kevo:params begin
#define BLOCK 64
#define VEC 1
#define ITEMS 1
// kevo:params end
// axpy: out = a*x + y. Each thread handles ITEMS groups of VEC consecutive
// elements (VEC-wide loads when VEC > 1; the tail takes the scalar path).
#include <cstdint>

template <int V> struct Vec;
template <> struct Vec<1> { using T = float; };
template <> struct Vec<2> { using T = float2; };
template <> struct Vec<4> { using T = float4; };

__device__ inline float axpy1(float a, float x, float y) { return a * x + y; }
__device__ inline float2 axpyv(float a, float2 x, float2 y) { return make_float2(a * x.x + y.x, a * x.y + y.y); }
__device__ inline float4 axpyv(float a, float4 x, float4 y) {
  return make_float4(a * x.x + y.x, a * x.y + y.y, a * x.z + y.z, a * x.w + y.w);
}
__device__ inline float axpyv(float a, float x, float y) { return axpy1(a, x, y); }

__global__ void __launch_bounds__(BLOCK) axpy_kernel(const float* __restrict__ x, const float* __restrict__ y,
                                                     float* __restrict__ out, float a, int n) {
  using T = typename Vec<VEC>::T;
  const long long nv = n / VEC;   // full vectors
  const long long base = (long long)blockIdx.x * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const long long v = base + (long long)k * BLOCK;
    if (v < nv) reinterpret_cast<T*>(out)[v] = axpyv(a, reinterpret_cast<const T*>(x)[v], reinterpret_cast<const T*>(y)[v]);
  }
  // The tail (n % VEC elements) goes to the first threads of block 0.
  if (blockIdx.x == 0 && threadIdx.x < n % VEC) {
    const long long i = nv * VEC + threadIdx.x;
    out[i] = axpy1(a, x[i], y[i]);
  }
}

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  const long long nv = N / VEC;
  long long blocks = (nv + (long long)BLOCK * ITEMS - 1) / ((long long)BLOCK * ITEMS);
  if (blocks < 1) blocks = 1;
  axpy_kernel<<<(unsigned)blocks, BLOCK>>>(x, y, out, a, N);
}
