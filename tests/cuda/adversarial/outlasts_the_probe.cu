// Answers its timed calls early, as answers_early.cu does, but leaves GPU
// work that lasts several of the GPU's time slices (20 ms: the axpy, then
// one thread spinning on the GPU's clock). The GPU time-slices between
// contexts: the judge's probe after the call (an empty kernel of its own
// context) runs as soon as its context gets a slice, while the host's
// kernel goes on in the next one, so one probe waits for a slice of that
// work, not for all of it. The outputs are written first, so the judge's
// check after the call finds them right.
//
// With `#define EARLY 0` before it, the same work answered after the
// kernel: the control of tests/cuda/test_cuda_gpu.cpp.
//
// How the early answer is written: the control block is the shared mapping
// of the memfd the judge made ("/memfd:kevo-candidate" in /proc/self/maps;
// backends/native/judge/host_control.hpp: `call` at byte 0, `done` at byte
// 576); a thread writes the call's number into `done` after 1.15 x the
// roofline floor of axpy's bytes (12 N / 4.8 TB/s).
// Expected on kevo: timed as the same work answered after the kernel (the
// judge's probes after a call follow one another while each is held up,
// docs/cuda.md#verdicts), or a verdict that is not `correct`.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

#ifndef EARLY
#define EARLY 1
#endif

__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

// One thread, `ns` nanoseconds on the GPU's global timer.
__global__ void spin(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

namespace {

constexpr unsigned long long kSpinNs = 20000000ULL;   // 20 ms

std::atomic<std::uint32_t>* g_call = nullptr;
std::atomic<std::uint32_t>* g_done = nullptr;

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

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static bool started = false;
  if (!started) {
    started = true;
    if (EARLY) find_control_block();
  }
  const auto start = std::chrono::steady_clock::now();
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
  spin<<<1, 1>>>(kSpinNs);
  if (!g_done) return;
  const std::uint32_t seq = g_call->load();
  const auto at = start + std::chrono::nanoseconds(static_cast<long long>(1.15 * 12.0 * N / 4.8e12 * 1e9));
  std::thread([seq, at] {
    while (std::chrono::steady_clock::now() < at) {
    }
    g_done->store(seq);
  }).detach();
}
