// Library baseline (docs/tasks.md#baselines): cuBLAS SGEMM in full fp32.
// Row-major C = A @ B is column-major C^T = B^T @ A^T: cuBLAS gets B first
// (N x K, leading dimension N) and A second (K x M, leading dimension K),
// both untransposed. CUBLAS_DEFAULT_MATH keeps TF32 off (and kevo sets
// NVIDIA_TF32_OVERRIDE=0 for every worker), so this is the same arithmetic
// the task asks of candidates.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace {

// A cuBLAS failure must not pass as a result: the worker dies loudly and
// the baseline is reported as failed.
void require(bool ok, const char* what, int code) {
  if (ok) return;
  std::fprintf(stderr, "sgemm cublas baseline: %s failed (%d)\n", what, code);
  std::abort();
}

// One handle per worker process (creating one takes milliseconds; the
// worker calls this many times). It lives as long as the CUDA context.
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t made = nullptr;
    const cublasStatus_t s = cublasCreate(&made);
    require(s == CUBLAS_STATUS_SUCCESS, "cublasCreate", static_cast<int>(s));
    const cublasStatus_t m = cublasSetMathMode(made, CUBLAS_DEFAULT_MATH);
    require(m == CUBLAS_STATUS_SUCCESS, "cublasSetMathMode", static_cast<int>(m));
    return made;
  }();
  return h;
}

}  // namespace

extern "C" void sgemm(const float* A, const float* B, float* C, int32_t M, int32_t N, int32_t K) {
  cublasHandle_t h = handle();
  cublasSetStream(h, nullptr);   // the legacy default stream, which kevo's timing events use
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t s = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N);
  require(s == CUBLAS_STATUS_SUCCESS, "cublasSgemm", static_cast<int>(s));
}
