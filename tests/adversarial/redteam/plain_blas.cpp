// The same BLAS call without hiding it: the check of the mapped files
// finds libblas (forbidden). The control for hidden_blas.cpp.
#include <dlfcn.h>

#include <cstdint>
#include <vector>

namespace {
using Sgemv = void (*)(const char*, const int*, const int*, const float*, const float*, const int*, const float*,
                       const int*, const float*, float*, const int*);
Sgemv g_sgemv = nullptr;
}  // namespace

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  if (!g_sgemv) {
    void* h = ::dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
    if (h) g_sgemv = reinterpret_cast<Sgemv>(::dlsym(h, "sgemv_"));
  }
  static std::vector<float> ones;
  if (ones.size() < static_cast<std::size_t>(N)) ones.assign(static_cast<std::size_t>(N), 1.0f);
  const char t = 'T';
  const int m = N, n = M, lda = N, inc = 1;
  const float one = 1.0f, zero = 0.0f;
  g_sgemv(&t, &m, &n, &one, A, &lda, ones.data(), &inc, &zero, out, &inc);
}
