// vfork: a process, not a thread (a violation).
#include <cstdint>
#include <sys/syscall.h>
#include <unistd.h>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  if (::syscall(SYS_vfork) == 0) ::_exit(0);
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
