// Leaves GPU work running for other workers' timings (docs/verdicts.md
// #threat-model, hole 4): "it changes no other judgement". In each of its
// first calls (its correctness calls) it computes the axpy, answers as soon
// as the axpy is done, through the control block (as answers_early.cu
// does), and leaves 300 ms of one GPU thread spinning on a stream of its
// own. The judge stops its process, not its GPU work: the spinning goes on
// while other workers take the GPU's exclusive slot and time their
// candidates and references beside it, each slowed by the time slices it
// takes. Its own verdict does not matter.
// Expected on kevo: another candidate judged meanwhile is timed as it is
// alone (Adversarial.WorkLeftForOtherWorkersTimingsMovesNoOtherJudgement).
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

__global__ void spin(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

namespace {

constexpr int kCallsWithWork = 12;
constexpr unsigned long long kSpinNs = 300000000ULL;   // 300 ms

std::atomic<std::uint32_t>* g_call = nullptr;
std::atomic<std::uint32_t>* g_done = nullptr;

// The control block: the first writable shared mapping of a kevo memfd
// (backends/native/judge/host_control.hpp: `call` at byte 0, `done` at 576).
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
  static int calls = 0;
  static cudaStream_t side = nullptr;
  static cudaEvent_t axpy_done = nullptr;
  if (calls++ == 0) {
    find_control_block();
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&axpy_done, cudaEventDisableTiming);
  }
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
  if (!g_done || !side || !axpy_done || calls > kCallsWithWork) return;
  cudaEventRecord(axpy_done, 0);
  spin<<<1, 1, 0, side>>>(kSpinNs);
  const std::uint32_t seq = g_call->load();
  // The answer once the outputs are written, before the spinning is done.
  std::thread([seq] {
    cudaEventSynchronize(axpy_done);
    g_done->store(seq);
  }).detach();
}
