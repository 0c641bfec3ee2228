// clone3 (flags in memory, out of a filter's sight): refused with ENOSYS,
// so that glibc falls back to clone. Prints the result, computes honestly.
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  static bool done = false;
  if (!done) {
    done = true;
    std::uint64_t args[11];
    std::memset(args, 0, sizeof args);
    args[4] = 17;   // exit_signal SIGCHLD: a process
    const long r = ::syscall(435 /* clone3 */, args, sizeof args);
    if (r == 0) ::_exit(0);
    std::printf("clone3 %ld errno %d\n", r, errno);
    std::fflush(stdout);
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
