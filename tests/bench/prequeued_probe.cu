// Can the judge's probe after a call be queued before the call, so that its
// own launch no longer overlaps work an early answer left running?
// (docs/verdicts.md#threat-model: an answer before the CUDA kernel is done.)
//
// The judge's probe today is launched when the host's answer arrives (an
// empty kernel and a synchronize of the judge's context). On an H100 an axpy
// answered about 40 us early was charged only 12-31 us a call: the probe's
// launch and the switch between contexts overlap the work left running. This
// program measures, on one GPU, a child process standing in for the kernel
// host (its own context, a memory-bound kernel of about 90 us) and this
// process standing in for the judge, two probes after each call:
//   launched   an empty kernel launched at the answer, then a synchronize;
//   prequeued  before the call, the judge's stream is given a wait on a word
//              of mapped host memory (cuStreamWaitValue32) and then a write
//              of another word (cuStreamWriteValue32); at the answer the
//              judge sets the first word and spins until the GPU writes the
//              second;
// each after three kinds of call of the child's:
//   null    no kernel, a synchronize, the answer;
//   honest  the kernel, a synchronize, the answer;
//   early   the kernel, the answer EARLY_US after the launch, no synchronize
//           (the kernel runs on: what answers_early.cu does).
// For each it prints the call's round trip (the judge's post to the answer)
// and the probe (the answer to the probe's end): median, q25, q75. What a
// probe charges an early answer is its median beyond the null call's; what
// it must tolerate is the honest call's median beyond the null call's. The
// last line compares the child's kernel alone with the kernel while the
// judge's prequeued wait is pending (does a waiting stream of another
// context slow it?).
//
// First run (an H100, driver 580, 2026-12-07, 200 rounds, early at 50 us):
// the prequeued probe came back 8.4 us after an early answer that left
// 34.5 us of kernel running (after a null call 3.1 us, an honest one
// 10.9 us): the GPU switched to the judge's context in the middle of the
// child's kernel, so a queued probe sees less of the left work than a
// launched one. (The launched rows of that run, 150-310 us, are far from
// the worker's probes of about 10 us and are not understood.)
//
//   nvcc -O2 -std=c++17 -o prequeued_probe tests/bench/prequeued_probe.cu -lcuda
//   ./prequeued_probe [rounds] [early_us]      (default 200, 50)
//
// tests/bench/run_cuda_h200.sh phase `prequeued_probe` builds and runs it.
#include <cuda.h>
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
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

__global__ void axpy(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

__global__ void empty() {}

constexpr int kN = 1 << 24;   // 16M floats: about 90 us on an H100

// The control block shared by the two processes (made before the fork).
struct Control {
  std::atomic<std::uint32_t> call{0};   // the judge's post: the call's number
  std::atomic<std::uint32_t> kind{0};   // 0 null, 1 honest, 2 early, 3 quit
  std::atomic<std::uint32_t> done{0};   // the child's answer: the call's number
  std::atomic<std::uint32_t> idle{0};   // the call's number once its kernel is done
  std::atomic<std::int32_t> failed{0};
  std::atomic<std::uint32_t> early_ns{50000};
};

[[noreturn]] void child(Control* c) {
  float *x = nullptr, *y = nullptr, *out = nullptr;
  cudaStream_t s = nullptr;
  if (cudaMalloc(&x, kN * sizeof(float)) != cudaSuccess || cudaMalloc(&y, kN * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&out, kN * sizeof(float)) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess ||
      cudaMemset(x, 0, kN * sizeof(float)) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
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
    if (kind != 0) axpy<<<(kN + 255) / 256, 256, 0, s>>>(x, y, out, 2.0f, kN);
    if (kind == 2) {
      const auto at = start + std::chrono::nanoseconds(c->early_ns.load());
      while (Clock::now() < at) {
      }
    } else if (cudaStreamSynchronize(s) != cudaSuccess) {
      c->failed = 3;
    }
    c->done.store(n, std::memory_order_release);
    // An early answer's kernel is waited for before the next call, outside
    // the judge's clock, as a host would (its kernels queue in order anyway).
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
  const int rounds = argc > 1 ? std::max(10, std::atoi(argv[1])) : 200;
  const int early_us = argc > 2 ? std::max(1, std::atoi(argv[2])) : 50;
  void* shared = mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return 1;
  auto* c = new (shared) Control;
  c->early_ns = static_cast<std::uint32_t>(early_us) * 1000u;
  // The child is forked before this process touches the driver.
  const pid_t pid = fork();
  if (pid == 0) child(c);

  cudaStream_t s = nullptr;
  std::uint32_t* words = nullptr;   // [0] the judge's release, [1] the GPU's acknowledgement
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cudaHostAlloc(reinterpret_cast<void**>(&words), 64, cudaHostAllocMapped) != cudaSuccess) {
    std::fprintf(stderr, "judge: CUDA set-up failed\n");
    return 1;
  }
  void* dev_words = nullptr;
  if (cudaHostGetDevicePointer(&dev_words, words, 0) != cudaSuccess) {
    std::fprintf(stderr, "judge: no device pointer for mapped host memory\n");
    return 1;
  }
  volatile std::uint32_t* release = words;
  volatile std::uint32_t* ack = words + 1;
  *release = 0;
  *ack = 0;
  const auto release_dev = reinterpret_cast<CUdeviceptr>(dev_words);
  const auto ack_dev = release_dev + sizeof(std::uint32_t);
  empty<<<1, 1, 0, s>>>();
  cudaStreamSynchronize(s);

  std::uint32_t seq = 0;
  // One call of kind `kind` and its probe; returns {round trip, probe} in us,
  // or a negative probe on a CUDA error.
  auto one = [&](std::uint32_t kind, bool prequeued) -> std::pair<double, double> {
    ++seq;
    if (prequeued) {
      if (cuStreamWaitValue32(reinterpret_cast<CUstream>(s), release_dev, seq, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS ||
          cuStreamWriteValue32(reinterpret_cast<CUstream>(s), ack_dev, seq, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS)
        return {0.0, -1.0};
    }
    c->kind = kind;
    const auto posted = Clock::now();
    c->call.store(seq, std::memory_order_release);
    while (c->done.load(std::memory_order_acquire) != seq) {
    }
    const auto answered = Clock::now();
    if (prequeued) {
      *release = seq;
      while (*ack != seq) {
      }
    } else {
      empty<<<1, 1, 0, s>>>();
      if (cudaStreamSynchronize(s) != cudaSuccess) return {0.0, -1.0};
    }
    const auto probed = Clock::now();
    // The child's kernel (an early answer's) is done before the next call.
    while (c->idle.load(std::memory_order_acquire) != seq) {
    }
    return {us(posted, answered), us(answered, probed)};
  };

  std::printf("rounds %d, early answer %d us after the launch\n", rounds, early_us);
  std::printf("probe,call,round_trip_q25_us,round_trip_median_us,round_trip_q75_us,probe_q25_us,probe_median_us,"
              "probe_q75_us\n");
  const char* kinds[] = {"null", "honest", "early"};
  double med[2][3] = {}, rt_med[2][3] = {};
  for (int pq = 0; pq < 2; ++pq) {
    for (std::uint32_t kind = 0; kind < 3; ++kind) {
      std::vector<double> rt, pr;
      for (int k = 0; k < rounds + 10; ++k) {
        const auto [r, p] = one(kind, pq == 1);
        if (p < 0) {
          std::fprintf(stderr, "CUDA error in the %s probe\n", pq ? "prequeued" : "launched");
          return 1;
        }
        if (k >= 10) {   // warm-up
          rt.push_back(r);
          pr.push_back(p);
        }
      }
      med[pq][kind] = q(pr, 0.5);
      rt_med[pq][kind] = q(rt, 0.5);
      std::printf("%s,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n", pq ? "prequeued" : "launched", kinds[kind], q(rt, 0.25),
                  q(rt, 0.5), q(rt, 0.75), q(pr, 0.25), q(pr, 0.5), q(pr, 0.75));
      std::fflush(stdout);
    }
  }
  for (int pq = 0; pq < 2; ++pq)
    std::printf("%s: honest beyond null %.1f us (the tolerance it needs); early beyond null %.1f us against "
                "%.1f us left running (the honest round trip less the early one): %.1f us hidden\n",
                pq ? "prequeued" : "launched", med[pq][1] - med[pq][0], med[pq][2] - med[pq][0],
                rt_med[pq][1] - rt_med[pq][2], (rt_med[pq][1] - rt_med[pq][2]) - (med[pq][2] - med[pq][1]));
  // Does the judge's pending wait (prequeued) slow the host's kernel?
  std::printf("honest round trip with the judge's stream idle %.1f us, with its prequeued wait pending %.1f us\n",
              rt_med[0][1], rt_med[1][1]);
  c->kind = 3;
  c->call.store(++seq);
  int st = 0;
  waitpid(pid, &st, 0);
  if (c->failed) std::fprintf(stderr, "the child failed (%d)\n", static_cast<int>(c->failed));
  return 0;
}
