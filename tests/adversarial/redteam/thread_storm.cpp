// Starts 3000 threads with minimal stacks (asleep) before it
// computes: more than limits.processes (RLIMIT_NPROC headroom, 256 in the
// test) allows. Each thread is a process number of the machine and kernel
// memory outside RLIMIT_AS: with enough of them (pid_max is often 32768)
// a candidate would exhaust the machine's process table. Prints how many
// it got.
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace {
void* park(void*) {
  for (;;) ::sleep(1000);
  return nullptr;
}
}  // namespace

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  static bool done = false;
  if (!done) {
    done = true;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 16384);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int made = 0;
    for (; made < 3000; ++made) {
      pthread_t t;
      if (pthread_create(&t, &attr, park, nullptr) != 0) break;
    }
    std::printf("threads started %d\n", made);
    std::fflush(stdout);
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
