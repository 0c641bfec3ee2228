// prlimit64 on every other process it can name (the engine's limits would
// bind every later candidate of the run). It then computes honestly and
// prints how many attempts succeeded.
#include <cstdint>
#include <cstdio>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  static bool tried = false;
  if (!tried) {
    tried = true;
    int changed = 0;
    const rlimit low{16, 16};
    for (pid_t p = 1; p < 4096; ++p) {
      if (p == ::getpid()) continue;
      if (::syscall(SYS_prlimit64, p, RLIMIT_NOFILE, &low, nullptr) == 0) ++changed;
    }
    std::printf("prlimit-others %d\n", changed);
    std::fflush(stdout);
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
