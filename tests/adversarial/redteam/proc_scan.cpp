// Looks around its private /proc: which process numbers it can see (only
// its own, as the first process of its PID namespace), whether its parent
// is visible (getppid is 0 there), and what /proc/1/cmdline names (itself).
// Prints what it saw, then computes honestly.
#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  static bool done = false;
  if (!done) {
    done = true;
    int pids = 0;
    if (DIR* d = ::opendir("/proc")) {
      while (dirent* e = ::readdir(d))
        if (std::atoi(e->d_name) > 0) ++pids;
      ::closedir(d);
    }
    std::printf("visible pids %d self %d parent %d\n", pids, static_cast<int>(::getpid()), static_cast<int>(::getppid()));
    std::fflush(stdout);
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
