// Answers early, and first widens the tolerance that the judge's charge for
// an early answer allows. After each timed call the judge probes the GPU
// (an empty round trip of its own, which waits for work the host left
// running) and charges what the probe takes beyond its yardstick, less a
// tolerance: the larger of 5 us, a tenth of the calls' median round trip
// and the spread (IQR) of the same probe after the host's null calls. Those
// null calls are made twice: before the candidate's code is loaded, and
// again after its timed calls, when its threads run. A host that leaves
// GPU work running after every other null call of the second run makes
// that spread about as long as the work, and an early answer can then hide
// as much.
//
// How: a SIGCONT handler counts the judge's resumes since the last call of
// axpy (from the third on, the host is making null calls: a timed call is a
// prime and a call); a thread watches the control block's `done` word (the
// layout of answers_early.cu) and, right after every other null answer,
// puts a 200 us spinning kernel on a stream of its own, which the host's
// stop does not stop. Timed calls answer as answers_early.cu does (1.15 x
// the roofline floor, under the kernel's real time).
// Expected on kevo: the spread comes from the null calls made before this
// code was loaded (where they were made), so the early answer is charged
// as in answers_early.cu: timed near the same kernel answered honestly
// (other_stream.cu), or not `correct`.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

std::atomic<std::uint32_t>* g_call = nullptr;
std::atomic<std::uint32_t>* g_done = nullptr;
std::atomic<unsigned> g_since_call{0};   // resumes since the last call of axpy

void on_resume(int) { g_since_call.fetch_add(1); }

// The control block: the first writable shared mapping of a kevo memfd.
void find_control_block() {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    if (std::strstr(line, "memfd:kevo-") && perms[0] == 'r' && perms[1] == 'w' && perms[3] == 's') {
      char* base = reinterpret_cast<char*>(lo);
      g_call = reinterpret_cast<std::atomic<std::uint32_t>*>(base);
      g_done = reinterpret_cast<std::atomic<std::uint32_t>*>(base + 576);
      break;
    }
  }
  std::fclose(f);
}

// After every other null answer, 200 us of GPU work left running.
void widen() {
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return;
  std::uint32_t seen = g_done->load();
  unsigned nulls = 0;
  for (;;) {
    const std::uint32_t d = g_done->load();
    if (d == seen) continue;
    seen = d;
    if (g_since_call.load() >= 3 && (++nulls & 1u)) spin<<<1, 1, 0, s>>>(200000);
  }
}

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static bool started = false;
  if (!started) {
    started = true;
    find_control_block();
    if (g_done) {
      struct sigaction sa = {};
      sa.sa_handler = on_resume;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      sigaction(SIGCONT, &sa, nullptr);
      std::thread(widen).detach();
    }
  }
  g_since_call.store(0);
  const auto start = std::chrono::steady_clock::now();
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
  if (!g_done) return;
  const std::uint32_t seq = g_call->load();
  const auto at = start + std::chrono::nanoseconds(static_cast<long long>(1.15 * 12.0 * N / 4.8e12 * 1e9));
  std::thread([seq, at] {
    while (std::chrono::steady_clock::now() < at) {
    }
    g_done->store(seq);
  }).detach();
}
