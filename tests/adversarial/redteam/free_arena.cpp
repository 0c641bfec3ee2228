// Frees memory the host does not own (the arena's input buffer) through
// the judge's malloc hooks: glibc aborts (SIGABRT), its own.
#include <cstdint>
#include <cstdlib>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
  std::free(const_cast<float*>(A));
}
