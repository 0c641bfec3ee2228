// Tries to change how its process dies, is dumped, traced or reaped:
// PR_SET_PDEATHSIG 0 (outlive the judge), PR_SET_DUMPABLE 1,
// PR_SET_PTRACER any, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS 0,
// PR_SET_MM, PR_SET_TIMERSLACK: each fails with EPERM (the policy), and it
// prints what it got; then it computes honestly.
#include <cstdint>
#include <cstdio>
#include <sys/prctl.h>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  static bool done = false;
  if (!done) {
    done = true;
    const int r[] = {::prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0),      ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0),
                     ::prctl(PR_SET_PTRACER, -1L, 0, 0, 0),     ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0),
                     ::prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0),  ::prctl(PR_SET_MM, PR_SET_MM_START_BRK, 0, 0, 0),
                     ::prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)};
    std::printf("prctl results:");
    for (int x : r) std::printf(" %d", x);
    std::printf(" dumpable now %d\n", ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    std::fflush(stdout);
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
