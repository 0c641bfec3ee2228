// Does a read of the outputs at the host's answer catch an answer given
// before the kernel is done? (docs/verdicts.md#threat-model: an answer before
// the CUDA kernel is done, the open early-answer hole.)
//
// The judge's probe after a call (an empty round trip of its own context)
// charges only part of the work an early answer leaves running: the GPU
// switches to the judge's context in the middle of the host's kernel
// (prequeued_probe.cu), so the probe ends while the kernel goes on. The
// same switch could be the defence: if the judge's first GPU work after
// the answer reads the call's outputs, it reads them while the host's
// kernel is switched out, so an early answer finds its outputs incomplete
// (a wrong answer) unless it was given once they were all written. This
// program measures that on one GPU, a child process standing in for the
// kernel host (its own context; an axpy of 16M floats into the judge's
// memory, opened through an IPC handle, about 90 us on an H100) and this
// process for the judge, which poisons the output before each call and
// after the answer does one of:
//   check        a kernel that counts the output's elements that are not
//                the axpy's value, launched at the answer, and a synchronize
//   probe+check  the empty probe and a synchronize first (the worker's
//                order today), then the same count;
//   together     the empty probe and the count queued at once, one
//                synchronize (the probe's end no longer waits for the CPU
//                before the count is launched);
// for an honest answer (after the child's synchronize) and for answers
// given D us before the honest round trip's median (the child does not
// synchronize before answering; what answers_early.cu does), D in 5, 10,
// 20, 30, 40. For each it prints the share of calls whose count found
// elements unwritten, the median share of elements unwritten, and the
// median time from the answer to the count's end.
//
// First run (an H100, driver 580, 2026-12-07, 200 calls per row): no call
// found any element unwritten, in any order, for answers 5-40 us early
// against a 227 us round trip; the count ended 186 us after an honest
// answer and 216 us after one 40 us early (check order): the judge's
// kernel ran once the host's had ended, not in the middle of it. The
// premise is false, and the read is no defence.
//
//   nvcc -O2 -std=c++17 -o check_at_answer tests/bench/check_at_answer.cu
//   ./check_at_answer [rounds]      (default 100)
//
// tests/bench/run_cuda_h200.sh phase `check_at_answer` builds and runs it.
#include <cuda_runtime.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kN = 1 << 24;

__global__ void axpy(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

__global__ void empty() {}

// Counts the elements of `out` that are not `want` (the poison is NaN).
__global__ void count_unwritten(const float* out, float want, int n, unsigned long long* bad) {
  unsigned local = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    local += !(out[i] == want);
  if (local) atomicAdd(bad, static_cast<unsigned long long>(local));
}

struct Control {
  std::atomic<std::uint32_t> call{0};   // the judge's post: the call's number
  std::atomic<std::uint32_t> kind{0};   // 1 honest, 2 early, 3 quit
  std::atomic<std::uint32_t> done{0};   // the child's answer
  std::atomic<std::uint32_t> idle{0};   // the call's number once its kernel is done
  std::atomic<std::int32_t> failed{0};
  std::atomic<std::uint32_t> early_ns{0};
  std::atomic<std::uint32_t> handle_ready{0};
  cudaIpcMemHandle_t handle;
};

[[noreturn]] void child(Control* c) {
  while (c->handle_ready.load(std::memory_order_acquire) == 0) {
  }
  float *x = nullptr, *y = nullptr;
  void* out = nullptr;
  cudaStream_t s = nullptr;
  if (cudaMalloc(&x, kN * sizeof(float)) != cudaSuccess || cudaMalloc(&y, kN * sizeof(float)) != cudaSuccess ||
      cudaIpcOpenMemHandle(&out, c->handle, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess ||
      cudaStreamCreate(&s) != cudaSuccess || cudaMemset(x, 0, kN * sizeof(float)) != cudaSuccess ||
      cudaMemset(y, 0, kN * sizeof(float)) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    c->failed = 1;
    std::_Exit(2);
  }
  std::uint32_t seen = 0;
  for (;;) {
    std::uint32_t n = 0;
    while ((n = c->call.load(std::memory_order_acquire)) == seen) {
    }
    seen = n;
    const std::uint32_t kind = c->kind.load();
    if (kind == 3) std::_Exit(0);
    const auto start = Clock::now();
    axpy<<<(kN + 255) / 256, 256, 0, s>>>(x, y, static_cast<float*>(out), 2.0f, kN);
    if (kind == 2) {
      const auto at = start + std::chrono::nanoseconds(c->early_ns.load());
      while (Clock::now() < at) {
      }
    } else if (cudaStreamSynchronize(s) != cudaSuccess) {
      c->failed = 3;
    }
    c->done.store(n, std::memory_order_release);
    if (kind == 2) (void)cudaStreamSynchronize(s);
    c->idle.store(n, std::memory_order_release);
  }
}

double q(std::vector<double> v, double p) {
  if (v.empty()) return -1.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

double us(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(10, std::atoi(argv[1])) : 100;
  void* shared = mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 1;
  auto* c = new (shared) Control;
  const pid_t pid = fork();   // before this process touches the driver
  if (pid == 0) child(c);

  float* out = nullptr;
  unsigned long long* bad = nullptr;
  cudaStream_t s = nullptr;
  if (cudaMalloc(&out, kN * sizeof(float)) != cudaSuccess || cudaMalloc(&bad, sizeof(*bad)) != cudaSuccess ||
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaIpcGetMemHandle(&c->handle, out) != cudaSuccess) {
    std::fprintf(stderr, "judge: CUDA set-up failed\n");
    return 1;
  }
  c->handle_ready.store(1, std::memory_order_release);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);

  std::uint32_t seq = 0;
  struct One {
    double round_trip_us, check_us, unwritten_share;
  };
  // One call and the judge's read of its output after the answer.
  // order: 0 check, 1 probe+check, 2 together.
  auto one = [&](std::uint32_t kind, int order) -> One {
    cudaMemsetAsync(out, 0xFF, kN * sizeof(float), s);   // the poison (NaN)
    cudaMemsetAsync(bad, 0, sizeof(*bad), s);
    cudaStreamSynchronize(s);
    ++seq;
    c->kind = kind;
    const auto posted = Clock::now();
    c->call.store(seq, std::memory_order_release);
    while (c->done.load(std::memory_order_acquire) != seq) {
    }
    const auto answered = Clock::now();
    if (order != 0) empty<<<1, 1, 0, s>>>();
    if (order == 1) cudaStreamSynchronize(s);
    count_unwritten<<<sms * 4, 512, 0, s>>>(out, 0.0f, kN, bad);
    unsigned long long n_bad = 0;
    cudaMemcpyAsync(&n_bad, bad, sizeof(n_bad), cudaMemcpyDeviceToHost, s);
    if (cudaStreamSynchronize(s) != cudaSuccess) return {0, -1, 0};
    const auto checked = Clock::now();
    while (c->idle.load(std::memory_order_acquire) != seq) {
    }
    return {us(posted, answered), us(answered, checked), static_cast<double>(n_bad) / kN};
  };

  // The honest round trip, for where the early answers go.
  std::vector<double> honest_rt;
  for (int k = 0; k < rounds + 10; ++k) {
    const One o = one(1, 0);
    if (o.check_us < 0) return 1;
    if (k >= 10) honest_rt.push_back(o.round_trip_us);
  }
  const double honest = q(honest_rt, 0.5);
  std::printf("rounds %d; honest round trip median %.1f us (q25 %.1f, q75 %.1f)\n", rounds, honest,
              q(honest_rt, 0.25), q(honest_rt, 0.75));
  std::printf("order,answer,calls_with_unwritten_share,unwritten_median_share,round_trip_median_us,"
              "answer_to_check_end_median_us\n");
  const char* orders[] = {"check", "probe+check", "together"};
  for (int order = 0; order < 3; ++order) {
    for (int early : {0, 5, 10, 20, 30, 40}) {
      const std::uint32_t kind = early == 0 ? 1 : 2;
      c->early_ns = static_cast<std::uint32_t>(std::max(1.0, honest - early) * 1000.0);
      std::vector<double> rt, ck, share;
      int seen_bad = 0;
      for (int k = 0; k < rounds; ++k) {
        const One o = one(kind, order);
        if (o.check_us < 0) return 1;
        rt.push_back(o.round_trip_us);
        ck.push_back(o.check_us);
        share.push_back(o.unwritten_share);
        seen_bad += o.unwritten_share > 0;
      }
      char answer[32];
      std::snprintf(answer, sizeof answer, early ? "%d us early" : "honest", early);
      std::printf("%s,%s,%.2f,%.4f,%.1f,%.1f\n", orders[order], answer,
                  static_cast<double>(seen_bad) / rounds, q(share, 0.5), q(rt, 0.5), q(ck, 0.5));
      std::fflush(stdout);
    }
  }
  c->kind = 3;
  c->call.store(++seq);
  int st = 0;
  waitpid(pid, &st, 0);
  if (c->failed) std::fprintf(stderr, "the child failed (%d)\n", static_cast<int>(c->failed));
  return 0;
}
