// Ends the process with exit code 128 + SIGSEGV but no fatal_signal
// claim: an exit, not a signal (protocol breach).
#include <cstdint>
#include <unistd.h>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
  ::_exit(139);
}
