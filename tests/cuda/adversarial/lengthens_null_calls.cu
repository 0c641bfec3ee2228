// Lengthens the null calls the judge makes after its code is loaded, and
// only those. The host's null calls are timed once before the candidate's
// code is in the process, and their median comes off every timed call; the
// judge makes them again inside the exclusive hold after the timed calls
// where that median cannot have been right (docs/cuda.md#verdicts). A
// longer null median taken off the calls would make this kernel look
// faster by as much.
//
// How: the judge resumes the host (SIGCONT) for every round trip, and a
// timed call is two of them (the prime, then the call) before a call of
// axpy; null calls come in a run, a prime and a null round trip each, with
// no call of axpy. A SIGCONT handler counts the resumes; a thread it
// starts at its first call watches the count and, from the third resume
// without a call of axpy on, puts a spinning kernel on a stream of its own:
// the null call's device-wide synchronize waits for it, and no timed call
// meets one. Expected on kevo: the shorter of the two medians comes off the
// calls (the first, made before this code was loaded), so it earns no more
// than the honest kernel.
#include <cuda_runtime.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <thread>

__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

// Spins for `ns` of the GPU's global timer.
__global__ void spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

namespace {

std::atomic<unsigned> g_resumes{0};          // SIGCONTs seen
std::atomic<unsigned> g_since_call{0};       // of them, since the last call of axpy

void on_resume(int) {
  g_since_call.fetch_add(1);
  g_resumes.fetch_add(1);
}

void watch() {
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return;
  unsigned seen = g_resumes.load();
  for (;;) {
    const unsigned r = g_resumes.load();
    if (r == seen) continue;
    seen = r;
    if (g_since_call.load() >= 3) spin<<<1, 1, 0, s>>>(150000);
  }
}

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static bool started = false;
  if (!started) {
    started = true;
    struct sigaction sa = {};
    sa.sa_handler = on_resume;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCONT, &sa, nullptr);
    std::thread(watch).detach();
  }
  g_since_call.store(0);
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
}
