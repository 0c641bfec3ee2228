// Answers its timed calls before its kernel is done. The host's answer is
// a word in the control block, which the host's process maps writable (it
// writes its answers there), and the judge's clock stops when that word
// moves: a thread of the candidate's can move it while the kernel still
// runs, and the host is then stopped, but its kernel is not. The outputs
// are checked after the judge's own next work on the GPU, which waits for
// the switch between contexts, by when the kernel has finished.
//
// How: the control block is the shared mapping of the memfd the judge
// made ("/memfd:kevo-candidate" in /proc/self/maps; its layout is in
// backends/native/judge/host_control.hpp: `call` at byte 0, `done` at
// byte 576). Every call (a timed call cannot be told from a correctness
// call by its resumes: the prime's is the only one) launches the kernel
// and has a thread write the call's number into `done` after 1.15 x the
// roofline floor of its bytes (12 N / 4.8 TB/s: above the floor, under
// the kernel's real time).
// Expected on kevo: timed as the same kernel without the trick
// (other_stream.cu), or a verdict that is not `correct`
// (docs/cuda.md#verdicts: the judge's probe after each timed call).
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

namespace {

std::atomic<std::uint32_t>* g_call = nullptr;
std::atomic<std::uint32_t>* g_done = nullptr;

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

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static bool started = false;
  if (!started) {
    started = true;
    find_control_block();
  }
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
