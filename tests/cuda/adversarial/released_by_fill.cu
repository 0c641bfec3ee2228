// Computes each timed call's outputs before the call, in work that the
// judge itself releases: at the end of every call it leaves, in a second,
// ordinary context of its host (cuCtxCreate: the host's device-wide
// synchronize after the call waits for the primary context and its green
// contexts, not for this one), a stream that waits on the GPU
// (cuStreamWaitValue32) until the last element of `out` holds the
// judgement's poison again, followed by the axpy. The judge's next input
// fill writes the new inputs and then poisons `out`: that releases the
// wait, and the axpy runs on the new inputs between the fill and the
// call (during the judge's L2 flush, or its reference call), outside the
// timed window. Nothing runs at the answer, so the probe after the call
// finds the GPU idle: the stream is waiting, not running.
//
// The released work computes the elements still poisoned, and its last
// block records in host memory (mapped, portable) the bits of x[0], N and
// `out` it computed for. A call reads x[0] (4 bytes) and launches nothing
// where the record matches; elsewhere (the first call of a shape, a
// correctness call, a chain not yet done) it computes in the call. The
// host then spins to 1.15 x the roofline floor of axpy's bytes (12 N /
// 4.8 TB/s), above the judge's floor check. The poison is read from `out`
// before the first call writes it. Each fill releases one chain; a chain
// set for other buffers (a correctness trial's shape) may never be
// released, so where one is pending and the buffers change, the chains go
// to a new stream.
//
// Where a step of the driver fails the kernel runs in the call, honestly,
// and a line on stderr says which step failed (no attack took place); the
// first call that finds its outputs computed says so on stderr.
// Expected on kevo: timed as the same kernel in the call (other_stream.cu),
// or a verdict that is not `correct` (docs/verdicts.md#threat-model, hole
// 10: work released by the judge's fill).
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

// In mapped, portable host memory: written by the released work's last
// block, read by the host.
struct Done {
  unsigned x0, n;
  unsigned long long out;
  unsigned chains;   // chains run, of this lane's
};

}  // namespace

__global__ void k_plain(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

// The released work: every element still poisoned is computed; the last
// block to finish leaves the record.
__global__ void k_released(const float* x, const float* y, float* out, float a, int n, unsigned poison,
                           unsigned* blocks_done, volatile Done* done) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n && __float_as_uint(out[i]) == poison) out[i] = a * x[i] + y[i];
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence();
  if (atomicAdd(blocks_done, 1u) != gridDim.x - 1) return;
  *blocks_done = 0;
  done->x0 = __float_as_uint(x[0]);
  done->n = static_cast<unsigned>(n);
  done->out = reinterpret_cast<unsigned long long>(out);
  done->chains = done->chains + 1;
  __threadfence_system();
}

namespace {

using CtxCreate = CUresult (*)(CUcontext*, CUctxCreateParams*, unsigned int, CUdevice);
using CtxPush = CUresult (*)(CUcontext);
using CtxPop = CUresult (*)(CUcontext*);
using StreamCreate = CUresult (*)(CUstream*, unsigned int);
using StreamQuery = CUresult (*)(CUstream);
using MemAlloc = CUresult (*)(CUdeviceptr*, size_t);
using Memset = CUresult (*)(CUdeviceptr, unsigned char, size_t);
using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void**, void**);
using WaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

void fail(const char* step, int code) {
  std::fprintf(stderr, "released_by_fill: %s failed (%d); computing in the call\n", step, code);
}

template <class F>
F entry(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found{};
  const cudaError_t e = cudaGetDriverEntryPointByVersion(name, &p, CUDART_VERSION, cudaEnableDefault, &found);
  if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
    fail(name, e != cudaSuccess ? e : static_cast<int>(found));
    return nullptr;
  }
  return reinterpret_cast<F>(p);
}

struct Driver {
  CtxPush push = nullptr;
  CtxPop pop = nullptr;
  StreamCreate stream_create = nullptr;
  StreamQuery query = nullptr;
  MemAlloc alloc = nullptr;
  Memset memset = nullptr;
  LaunchKernel launch = nullptr;
  WaitValue32 wait = nullptr;
} g_drv;

CUcontext g_ctx = nullptr;
CUfunction g_released = nullptr;
unsigned g_poison = 0;
bool g_ok = false;      // the second context and its first lane are there
bool g_said = false;    // the first precomputed call said so

// The stream the chains go to, with its own block counter (in the second
// context) and record, the chains set there, and the buffers of the last.
struct Lane {
  CUstream stream = nullptr;
  CUdeviceptr blocks_done = 0;
  volatile Done* done = nullptr;
  unsigned set = 0;
  const float* out = nullptr;
  int n = 0;
};
Lane g_lane;

// Inside the second context (pushed by the caller).
bool new_lane() {
  void* done = nullptr;
  if (cudaHostAlloc(&done, sizeof(Done), cudaHostAllocPortable | cudaHostAllocMapped) != cudaSuccess) {
    fail("cudaHostAlloc", 0);
    return false;
  }
  std::memset(done, 0, sizeof(Done));
  Lane l;
  l.done = static_cast<volatile Done*>(done);
  CUresult r = g_drv.stream_create(&l.stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    fail("cuStreamCreate", r);
    return false;
  }
  if ((r = g_drv.alloc(&l.blocks_done, sizeof(unsigned))) != CUDA_SUCCESS ||
      (r = g_drv.memset(l.blocks_done, 0, sizeof(unsigned))) != CUDA_SUCCESS) {
    fail("cuMemAlloc", r);
    return false;
  }
  g_lane = l;
  return true;
}

void start(const float* out, int n) {
  // `out` holds the poison on entry to every call.
  if (cudaMemcpy(&g_poison, out + (n - 1), sizeof g_poison, cudaMemcpyDeviceToHost) != cudaSuccess)
    return fail("reading the poison", 0);
  auto create = entry<CtxCreate>("cuCtxCreate");
  g_drv.push = entry<CtxPush>("cuCtxPushCurrent");
  g_drv.pop = entry<CtxPop>("cuCtxPopCurrent");
  g_drv.stream_create = entry<StreamCreate>("cuStreamCreate");
  g_drv.query = entry<StreamQuery>("cuStreamQuery");
  g_drv.alloc = entry<MemAlloc>("cuMemAlloc");
  g_drv.memset = entry<Memset>("cuMemsetD8");
  g_drv.launch = entry<LaunchKernel>("cuLaunchKernel");
  g_drv.wait = entry<WaitValue32>("cuStreamWaitValue32");
  if (!create || !g_drv.push || !g_drv.pop || !g_drv.stream_create || !g_drv.query || !g_drv.alloc ||
      !g_drv.memset || !g_drv.launch || !g_drv.wait)
    return;
  cudaKernel_t kernel{};
  const cudaError_t e = cudaGetKernel(&kernel, k_released);
  if (e != cudaSuccess) return fail("cudaGetKernel", e);
  g_released = reinterpret_cast<CUfunction>(kernel);
  int dev = 0;
  cudaGetDevice(&dev);
  const CUresult r = create(&g_ctx, nullptr, 0, static_cast<CUdevice>(dev));   // made current (pushed)
  if (r != CUDA_SUCCESS) return fail("cuCtxCreate", r);
  const bool lane = new_lane();
  CUcontext popped = nullptr;
  g_drv.pop(&popped);
  g_ok = lane;
}

// Sets the chain for the next fill of these buffers, in the second
// context; false where a step failed.
bool set_chain(const float* x, const float* y, float* out, float a, int n, unsigned blocks) {
  if (g_drv.push(g_ctx) != CUDA_SUCCESS) {
    fail("cuCtxPushCurrent", 0);
    return false;
  }
  bool ok = true;
  // An error of an earlier chain (the arena out of this context's reach).
  CUresult r = g_drv.query(g_lane.stream);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) {
    fail("the second context's earlier chain", r);
    ok = false;
  }
  // A chain still pending for these buffers is fine to queue behind: each
  // fill releases one (a chain's wait is evaluated after the one before it
  // ran, when `out` holds outputs, not the poison).
  if (ok && g_lane.done->chains != g_lane.set && (g_lane.out != out || g_lane.n != n)) ok = new_lane();
  if (ok && (r = g_drv.wait(g_lane.stream, reinterpret_cast<CUdeviceptr>(out + (n - 1)), g_poison,
                            CU_STREAM_WAIT_VALUE_EQ)) != CUDA_SUCCESS) {
    fail("cuStreamWaitValue32", r);
    ok = false;
  }
  if (ok) {
    unsigned poison = g_poison;
    unsigned* counter = reinterpret_cast<unsigned*>(g_lane.blocks_done);
    Done* done = const_cast<Done*>(g_lane.done);
    void* args[] = {&x, &y, &out, &a, &n, &poison, &counter, &done};
    if ((r = g_drv.launch(g_released, blocks, 1, 1, 256, 1, 1, 0, g_lane.stream, args, nullptr)) != CUDA_SUCCESS) {
      fail("cuLaunchKernel", r);
      ok = false;
    }
  }
  CUcontext popped = nullptr;
  g_drv.pop(&popped);
  if (ok) {
    ++g_lane.set;
    g_lane.out = out;
    g_lane.n = n;
  }
  return ok;
}

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  const auto t0 = std::chrono::steady_clock::now();
  static bool started = false;
  if (!started) {
    started = true;
    start(out, N);
  }
  const unsigned blocks = static_cast<unsigned>((N + 255) / 256);
  bool computed = false;
  if (g_ok) {
    unsigned x0 = 0;
    if (cudaMemcpy(&x0, x, sizeof x0, cudaMemcpyDeviceToHost) == cudaSuccess) {
      const volatile Done* d = g_lane.done;
      computed = d->x0 == x0 && d->n == static_cast<unsigned>(N) &&
                 d->out == reinterpret_cast<unsigned long long>(out);
    }
    if (computed && !g_said) {
      g_said = true;
      std::fprintf(stderr, "released_by_fill: a call found its outputs computed before it\n");
    }
  }
  if (!computed) k_plain<<<blocks, 256>>>(x, y, out, a, N);
  if (!g_ok) return;
  // The outputs written before the wait is set: its release is the next fill.
  cudaDeviceSynchronize();
  if (!set_chain(x, y, out, a, N, blocks)) {
    g_ok = false;
    return;
  }
  const auto until = t0 + std::chrono::nanoseconds(static_cast<long long>(1.15 * 12.0 * N / 4.8e12 * 1e9));
  while (std::chrono::steady_clock::now() < until) {
  }
}
