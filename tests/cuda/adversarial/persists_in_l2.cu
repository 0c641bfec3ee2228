// Keeps its inputs in the L2 across the judge's flush. The judge writes a
// buffer of twice the L2 before every timed call so that every call starts
// cold, as the reference's does. Lines that an access policy window marks
// persisting live in a part of the L2 set aside for them, which ordinary
// writes (the flush) do not evict; the judge's fresh inputs, written to the
// same addresses, hit them. So this candidate sets the largest persisting
// set-aside the device allows and, at every call, a window over as much of
// x as fits, and reads that part from the L2 instead of memory.
//
// The kernel is an honest axpy; only its memory is warm.
// Expected on kevo: no faster than the same kernel without the window
// (the judge resets the persisting lines before each flush:
// backend.cuda.reset_persisting_l2).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static cudaStream_t s = nullptr;
  static size_t set_aside = 0, window_max = 0;
  if (!s) {
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceProp p{};
    cudaGetDeviceProperties(&p, dev);
    set_aside = static_cast<size_t>(p.persistingL2CacheMaxSize);
    window_max = static_cast<size_t>(p.accessPolicyMaxWindowSize);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, set_aside);
  }
  const size_t bytes = std::min(static_cast<size_t>(N) * sizeof(float), window_max);
  if (bytes > 0 && set_aside > 0) {
    cudaStreamAttrValue v{};
    v.accessPolicyWindow.base_ptr = const_cast<float*>(x);
    v.accessPolicyWindow.num_bytes = bytes;
    v.accessPolicyWindow.hitRatio = std::min(1.0f, static_cast<float>(set_aside) / static_cast<float>(bytes));
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v);
  }
  k<<<(N + 255) / 256, 256, 0, s>>>(x, y, out, a, N);
}
