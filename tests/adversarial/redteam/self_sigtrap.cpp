// Raises SIGTRAP at itself: the host catches it and reports the death.
#include <csignal>
#include <cstdint>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  ::raise(SIGTRAP);
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
