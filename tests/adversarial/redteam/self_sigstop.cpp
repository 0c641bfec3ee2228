// Stops itself (kill(getpid(), SIGSTOP), allowed: its own number) before
// computing: as the first process of its PID namespace it is spared the
// stop; without one it would hang until the wall clock (its own time).
#include <csignal>
#include <cstdint>
#include <unistd.h>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  ::kill(::getpid(), SIGSTOP);
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
