// Answers its timed calls before its kernel is done, without touching the
// control block: the kernel runs in a second context of the host's (a green
// context, which shares the primary context's memory), so the host's
// device-wide synchronize after the call, which waits for the current
// context's work only, returns at once and the host answers while the
// kernel still runs (docs/verdicts.md#threat-model, hole 5).
//
// How: at the first call, a green context over every SM of the device
// (cuDeviceGetDevResource, cuDevResourceGenerateDesc, cuGreenCtxCreate) and
// a non-blocking stream of it; the driver's entry points come through the
// runtime (cudaGetDriverEntryPointByVersion), so nothing more is linked.
// Every call launches the context-independent kernel handle
// (cudaGetKernel) on that stream with cuLaunchKernel. Where any step fails
// the kernel is launched as other_stream.cu does, and a line on stderr
// says which step failed (the attack did not take place).
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

using GetDevResource = CUresult (*)(CUdevice, CUdevResource*, CUdevResourceType);
using GenerateDesc = CUresult (*)(CUdevResourceDesc*, CUdevResource*, unsigned int);
using GreenCtxCreate = CUresult (*)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned int);
using GreenCtxStreamCreate = CUresult (*)(CUstream*, CUgreenCtx, unsigned int, int);
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

CUstream g_stream = nullptr;
LaunchKernel g_launch = nullptr;
CUfunction g_kernel = nullptr;
cudaStream_t g_fallback = nullptr;

void start() {
  auto get_resource = entry<GetDevResource>("cuDeviceGetDevResource");
  auto generate = entry<GenerateDesc>("cuDevResourceGenerateDesc");
  auto create = entry<GreenCtxCreate>("cuGreenCtxCreate");
  auto stream_create = entry<GreenCtxStreamCreate>("cuGreenCtxStreamCreate");
  g_launch = entry<LaunchKernel>("cuLaunchKernel");
  if (!get_resource || !generate || !create || !stream_create || !g_launch) return;
  int dev = 0;
  cudaGetDevice(&dev);
  CUdevResource sms{};
  CUresult r = get_resource(static_cast<CUdevice>(dev), &sms, CU_DEV_RESOURCE_TYPE_SM);
  if (r != CUDA_SUCCESS) return fail("cuDeviceGetDevResource", r);
  CUdevResourceDesc desc{};
  if ((r = generate(&desc, &sms, 1)) != CUDA_SUCCESS) return fail("cuDevResourceGenerateDesc", r);
  CUgreenCtx green{};
  if ((r = create(&green, desc, static_cast<CUdevice>(dev), CU_GREEN_CTX_DEFAULT_STREAM)) != CUDA_SUCCESS)
    return fail("cuGreenCtxCreate", r);
  CUstream s{};
  if ((r = stream_create(&s, green, CU_STREAM_NON_BLOCKING, 0)) != CUDA_SUCCESS) return fail("cuGreenCtxStreamCreate", r);
  cudaKernel_t kernel{};
  const cudaError_t e = cudaGetKernel(&kernel, k);
  if (e != cudaSuccess) return fail("cudaGetKernel", e);
  g_kernel = reinterpret_cast<CUfunction>(kernel);
  g_stream = s;
}

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static bool started = false;
  if (!started) {
    started = true;
    start();
    if (!g_stream) cudaStreamCreateWithFlags(&g_fallback, cudaStreamNonBlocking);
  }
  const unsigned blocks = static_cast<unsigned>((N + 255) / 256);
  if (g_stream) {
    int n = N;
    void* args[] = {&x, &y, &out, &a, &n};
    const CUresult r = g_launch(g_kernel, blocks, 1, 1, 256, 1, 1, 0, g_stream, args, nullptr);
    if (r == CUDA_SUCCESS) return;
    fail("cuLaunchKernel", r);
    g_stream = nullptr;
    cudaStreamCreateWithFlags(&g_fallback, cudaStreamNonBlocking);
  }
  k<<<blocks, 256, 0, g_fallback>>>(x, y, out, a, N);
}
