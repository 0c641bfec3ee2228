// Answers its timed calls before its kernel is done, without touching the
// control block: the kernel runs in a second, ordinary context of the
// host's (cuCtxCreate), so the host's device-wide synchronize after the
// call, which waits for the primary context's work (and its green
// contexts': the first version of this attack used a green context and so
// answered honestly), returns at once and the host answers while the
// kernel still runs (docs/verdicts.md#threat-model, hole 5).
//
// How: at the first call, a context of its own on the device and a
// non-blocking stream of it; the driver's entry points come through the
// runtime (cudaGetDriverEntryPointByVersion), so nothing more is linked.
// Every call pushes that context, launches the context-independent kernel
// handle (cudaGetKernel) on its stream with cuLaunchKernel, and pops it
// again (the harness's runtime calls stay on the primary context). The
// arguments are the judge's arena, mapped into the process; a context
// that cannot reach them fails, which the next call sees (cuStreamQuery).
// Where any step fails the kernel is launched as other_stream.cu does,
// and a line on stderr says which step failed (the attack did not take
// place).
// Expected on kevo: timed as the same kernel answered honestly
// (other_stream.cu), or a verdict that is not `correct` (the judge's probe
// after each timed call waits for any context's work on the GPU).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

namespace {

using CtxCreate = CUresult (*)(CUcontext*, CUctxCreateParams*, unsigned int, CUdevice);
using CtxPush = CUresult (*)(CUcontext);
using CtxPop = CUresult (*)(CUcontext*);
using StreamCreate = CUresult (*)(CUstream*, unsigned int);
using StreamQuery = CUresult (*)(CUstream);
using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void**, void**);

void fail(const char* step, int code) {
  std::fprintf(stderr, "second_context: %s failed (%d); launching in the host's context\n", step, code);
}

// The driver's entry point of the toolkit's version; null (and a line on
// stderr) where the driver has none.
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

CUcontext g_ctx = nullptr;
CUstream g_stream = nullptr;
CtxPush g_push = nullptr;
CtxPop g_pop = nullptr;
StreamQuery g_query = nullptr;
LaunchKernel g_launch = nullptr;
CUfunction g_kernel = nullptr;
cudaStream_t g_fallback = nullptr;

void start() {
  auto create = entry<CtxCreate>("cuCtxCreate");
  auto stream_create = entry<StreamCreate>("cuStreamCreate");
  g_push = entry<CtxPush>("cuCtxPushCurrent");
  g_pop = entry<CtxPop>("cuCtxPopCurrent");
  g_query = entry<StreamQuery>("cuStreamQuery");
  g_launch = entry<LaunchKernel>("cuLaunchKernel");
  if (!create || !stream_create || !g_push || !g_pop || !g_query || !g_launch) return;
  int dev = 0;
  cudaGetDevice(&dev);
  cudaKernel_t kernel{};
  const cudaError_t e = cudaGetKernel(&kernel, k);
  if (e != cudaSuccess) return fail("cudaGetKernel", e);
  CUcontext ctx = nullptr;
  CUresult r = create(&ctx, nullptr, 0, static_cast<CUdevice>(dev));   // made current (pushed)
  if (r != CUDA_SUCCESS) return fail("cuCtxCreate", r);
  CUstream s = nullptr;
  r = stream_create(&s, CU_STREAM_NON_BLOCKING);
  CUcontext popped = nullptr;
  g_pop(&popped);
  if (r != CUDA_SUCCESS) return fail("cuStreamCreate", r);
  g_kernel = reinterpret_cast<CUfunction>(kernel);
  g_ctx = ctx;
  g_stream = s;
}

// The kernel on the second context's stream; false where a step failed.
bool launch_there(const float* x, const float* y, float* out, float a, int n, unsigned blocks) {
  if (g_push(g_ctx) != CUDA_SUCCESS) {
    fail("cuCtxPushCurrent", 0);
    return false;
  }
  // An error of the previous call's kernel (the arena out of its reach).
  CUresult r = g_query(g_stream);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) {
    fail("the second context's previous kernel", r);
  } else {
    void* args[] = {&x, &y, &out, &a, &n};
    r = g_launch(g_kernel, blocks, 1, 1, 256, 1, 1, 0, g_stream, args, nullptr);
    if (r != CUDA_SUCCESS) fail("cuLaunchKernel", r);
  }
  CUcontext popped = nullptr;
  g_pop(&popped);
  return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY;
}

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static bool started = false;
  if (!started) {
    started = true;
    start();
  }
  const unsigned blocks = static_cast<unsigned>((N + 255) / 256);
  if (g_stream) {
    if (launch_there(x, y, out, a, N, blocks)) return;
    g_stream = nullptr;
  }
  if (!g_fallback) cudaStreamCreateWithFlags(&g_fallback, cudaStreamNonBlocking);
  k<<<blocks, 256, 0, g_fallback>>>(x, y, out, a, N);
}
