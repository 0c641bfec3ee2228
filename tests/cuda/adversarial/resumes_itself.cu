// Resumes its own host while the judge believes it stopped. The judge
// stops the host (SIGSTOP) after every answer and resumes it (SIGCONT) for
// the next call; a POSIX timer whose signal is SIGCONT resumes it sooner,
// while the judge flushes the L2 and times the reference. The CPU attack
// (tests/adversarial/redteam/timing/timer_precompute.cpp) used that time to
// compute the next call's answer; this one does what slows the judge's
// side: once resumed by its timer, a thread puts a 200 us spinning kernel
// on a stream of its own, which the reference's device-wide synchronize
// shares the GPU with.
//
// How: a timer (CLOCK_MONOTONIC, SIGEV_SIGNAL with SIGCONT) armed at every
// call for 150 us later (after the answer: the kernel takes about 60 us). The SIGCONT
// handler counts the timer's resumes (si_code SI_TIMER; the judge's are
// SI_USER); each starts a spin.
// Expected on kevo: a sandbox violation (timer_create) under the policy;
// without the policy, the judge finds the host running between its calls
// ("resumed itself").
#include <cuda_runtime.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <ctime>
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

std::atomic<unsigned> g_resumes{0};
timer_t g_timer;
bool g_have_timer = false;

void on_resume(int, siginfo_t* si, void*) {
  if (si && si->si_code == SI_TIMER) g_resumes.fetch_add(1);
}

void watch() {
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return;
  unsigned seen = g_resumes.load();
  for (;;) {
    const unsigned r = g_resumes.load();
    if (r == seen) continue;
    seen = r;
    spin<<<1, 1, 0, s>>>(200000);
  }
}

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static bool started = false;
  if (!started) {
    started = true;
    struct sigaction sa = {};
    sa.sa_sigaction = on_resume;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigaction(SIGCONT, &sa, nullptr);
    sigevent sev = {};
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGCONT;
    g_have_timer = timer_create(CLOCK_MONOTONIC, &sev, &g_timer) == 0;
    std::thread(watch).detach();
  }
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
  if (g_have_timer) {
    itimerspec its = {};
    its.it_value.tv_nsec = 150000;   // after the answer (the kernel takes about 60 us)
    timer_settime(g_timer, 0, &its, nullptr);
  }
}
