// Computes each timed call's outputs before the call, in work that the
// judge itself releases: at the end of every call it leaves, in a second
// context of its host (a green context: the host's device-wide synchronize
// after the call does not wait for it), a stream that waits on the GPU
// (cuStreamWaitValue32) until the last element of `out` holds the
// judgement's poison again, followed by the axpy. The judge's next input
// fill writes the new inputs and then poisons `out`: that releases the
// wait, and the axpy runs on the new inputs between the fill and the
// call (during the judge's L2 flush, or its reference call), outside the
// timed window. Nothing runs at the answer, so the probe after the call
// finds the GPU idle: the stream is waiting, not running.
//
// The call's own kernel checks a record the released work leaves (the
// bits of x[0], N, a and the pointers it computed for) and does nothing
// where it matches; elsewhere (the first call of a shape, a correctness
// call whose fill came before the wait was set) it computes. The host
// then spins to 1.15 x the roofline floor of axpy's bytes (12 N / 4.8
// TB/s), above the judge's floor check. The poison is read from `out`
// before the first call writes it. Each fill releases one chain; a chain
// set for other buffers (a correctness trial's shape) may never be
// released, so where one is pending and the buffers change, the chains go
// to a new stream.
//
// Where a step of the driver fails the kernel runs in the call, honestly,
// and a line on stderr says which step failed (no attack took place).
// Expected on kevo: timed as the same kernel in the call (other_stream.cu),
// or a verdict that is not `correct` (docs/verdicts.md#threat-model: work
// released by the judge's fill).
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

struct Record {
  unsigned x0, a, n;
  unsigned ready;
  unsigned long long x, y, out;
  unsigned blocks_done;
};

}  // namespace

__device__ inline unsigned bits_of(float f) { return __float_as_uint(f); }

// The call's kernel: nothing to do where the released work computed these
// outputs already.
__global__ void k_call(const float* x, const float* y, float* out, float a, int n, const Record* r) {
  if (r->ready && r->n == static_cast<unsigned>(n) && r->a == bits_of(a) && r->x0 == bits_of(x[0]) &&
      r->x == reinterpret_cast<unsigned long long>(x) && r->y == reinterpret_cast<unsigned long long>(y) &&
      r->out == reinterpret_cast<unsigned long long>(out))
    return;
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

__global__ void k_plain(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

// The released work: every element still poisoned is computed; the last
// block to finish leaves the record and counts the chain as run in host
// memory the host reads directly (`ran`).
__global__ void k_released(const float* x, const float* y, float* out, float a, int n, unsigned poison, Record* r,
                           volatile unsigned* ran) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n && __float_as_uint(out[i]) == poison) out[i] = a * x[i] + y[i];
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence();
  if (atomicAdd(&r->blocks_done, 1u) != gridDim.x - 1) return;
  r->blocks_done = 0;
  r->x0 = bits_of(x[0]);
  r->a = bits_of(a);
  r->n = static_cast<unsigned>(n);
  r->x = reinterpret_cast<unsigned long long>(x);
  r->y = reinterpret_cast<unsigned long long>(y);
  r->out = reinterpret_cast<unsigned long long>(out);
  __threadfence();
  r->ready = 1;
  *ran = *ran + 1;
  __threadfence_system();
}

namespace {

using GetDevResource = CUresult (*)(CUdevice, CUdevResource*, CUdevResourceType);
using GenerateDesc = CUresult (*)(CUdevResourceDesc*, CUdevResource*, unsigned int);
using GreenCtxCreate = CUresult (*)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned int);
using GreenCtxStreamCreate = CUresult (*)(CUstream*, CUgreenCtx, unsigned int, int);
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

CUstream g_stream = nullptr;
GreenCtxStreamCreate g_stream_create = nullptr;
CUgreenCtx g_green{};
LaunchKernel g_launch = nullptr;
WaitValue32 g_wait = nullptr;
CUfunction g_released = nullptr;
Record* g_record = nullptr;
unsigned g_poison = 0;
// The stream the chains go to, with the chains set there and run (`ran`:
// mapped host memory the released work counts in) and the buffers of the
// last one. A chain set for other buffers (a shape of a correctness trial)
// may wait for ever, and every chain behind it in its stream: where one
// is still pending and the buffers change, a new lane is made.
struct Lane {
  CUstream stream = nullptr;
  volatile unsigned* ran = nullptr;
  unsigned set = 0;
  const float* out = nullptr;
  int n = 0;
};
Lane g_lane;

bool new_lane() {
  void* ran = nullptr;
  if (cudaHostAlloc(&ran, sizeof(unsigned), cudaHostAllocMapped) != cudaSuccess) {
    fail("cudaHostAlloc", 0);
    return false;
  }
  CUstream s{};
  const CUresult r = g_stream_create(&s, g_green, CU_STREAM_NON_BLOCKING, 0);
  if (r != CUDA_SUCCESS) {
    fail("cuGreenCtxStreamCreate", r);
    return false;
  }
  g_lane = Lane{};
  g_lane.stream = s;
  g_lane.ran = static_cast<volatile unsigned*>(ran);
  *g_lane.ran = 0;
  return true;
}

void start(const float* out, int n) {
  if (cudaMalloc(&g_record, sizeof(Record)) != cudaSuccess || cudaMemset(g_record, 0, sizeof(Record)) != cudaSuccess) {
    g_record = nullptr;
    return fail("cudaMalloc of the record", 0);
  }
  // `out` holds the poison on entry to every call.
  if (cudaMemcpy(&g_poison, out + (n - 1), sizeof g_poison, cudaMemcpyDeviceToHost) != cudaSuccess)
    return fail("reading the poison", 0);

  auto get_resource = entry<GetDevResource>("cuDeviceGetDevResource");
  auto generate = entry<GenerateDesc>("cuDevResourceGenerateDesc");
  auto create = entry<GreenCtxCreate>("cuGreenCtxCreate");
  g_stream_create = entry<GreenCtxStreamCreate>("cuGreenCtxStreamCreate");
  g_launch = entry<LaunchKernel>("cuLaunchKernel");
  g_wait = entry<WaitValue32>("cuStreamWaitValue32");
  if (!get_resource || !generate || !create || !g_stream_create || !g_launch || !g_wait) return;
  int dev = 0;
  cudaGetDevice(&dev);
  CUdevResource sms{};
  CUresult r = get_resource(static_cast<CUdevice>(dev), &sms, CU_DEV_RESOURCE_TYPE_SM);
  if (r != CUDA_SUCCESS) return fail("cuDeviceGetDevResource", r);
  CUdevResourceDesc desc{};
  if ((r = generate(&desc, &sms, 1)) != CUDA_SUCCESS) return fail("cuDevResourceGenerateDesc", r);
  if ((r = create(&g_green, desc, static_cast<CUdevice>(dev), CU_GREEN_CTX_DEFAULT_STREAM)) != CUDA_SUCCESS)
    return fail("cuGreenCtxCreate", r);
  cudaKernel_t kernel{};
  const cudaError_t e = cudaGetKernel(&kernel, k_released);
  if (e != cudaSuccess) return fail("cudaGetKernel", e);
  g_released = reinterpret_cast<CUfunction>(kernel);
  if (!new_lane()) return;
  g_stream = g_lane.stream;
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
  if (!g_record) {   // start() said why
    k_plain<<<blocks, 256>>>(x, y, out, a, N);
    return;
  }
  k_call<<<blocks, 256>>>(x, y, out, a, N, g_record);
  if (!g_stream) return;
  // The outputs written before the wait is set: its release is the next fill.
  cudaDeviceSynchronize();
  // A chain still pending for these buffers is fine to queue behind: each
  // fill releases one (a chain's wait is evaluated after the one before it
  // ran, when `out` holds outputs, not the poison).
  if (*g_lane.ran != g_lane.set && (g_lane.out != out || g_lane.n != N)) {
    if (!new_lane()) {
      g_stream = nullptr;
      return;
    }
    g_stream = g_lane.stream;
  }
  CUresult r = g_wait(g_stream, reinterpret_cast<CUdeviceptr>(out + (N - 1)), g_poison, CU_STREAM_WAIT_VALUE_EQ);
  if (r != CUDA_SUCCESS) {
    fail("cuStreamWaitValue32", r);
    g_stream = nullptr;
    return;
  }
  int n = N;
  unsigned poison = g_poison;
  Record* rec = g_record;
  unsigned* ran = const_cast<unsigned*>(g_lane.ran);
  void* args[] = {&x, &y, &out, &a, &n, &poison, &rec, &ran};
  r = g_launch(g_released, blocks, 1, 1, 256, 1, 1, 0, g_stream, args, nullptr);
  if (r != CUDA_SUCCESS) {
    fail("cuLaunchKernel", r);
    g_stream = nullptr;
    return;
  }
  ++g_lane.set;
  g_lane.out = out;
  g_lane.n = N;
  const auto until = t0 + std::chrono::nanoseconds(static_cast<long long>(1.15 * 12.0 * N / 4.8e12 * 1e9));
  while (std::chrono::steady_clock::now() < until) {
  }
}
