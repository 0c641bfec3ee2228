// Reference: cuBLAS (cublasGemmEx: bf16 inputs, fp32 compute, fp32 result in
// a scratch buffer), then one kernel for the epilogue, so that each output is
// rounded to bf16 once: Y = bf16_rn(max(acc + bias, 0)).
//
// Row-major Y = A @ B is column-major Y^T = B^T @ A^T: cuBLAS gets B as the
// first operand (N x K, leading dimension N) and A as the second (K x M,
// leading dimension K), both untransposed.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace {

// A failure here is the reference's own (it must not be judged as a
// candidate's): the worker dies loudly instead of returning wrong outputs.
void require(bool ok, const char* what, int code) {
  if (ok) return;
  std::fprintf(stderr, "gemm_bf16_bias_relu reference: %s failed (%d)\n", what, code);
  std::abort();
}

__global__ void bias_relu_kernel(const float* __restrict__ acc, const __nv_bfloat16* __restrict__ bias,
                                 __nv_bfloat16* __restrict__ Y, int M, int N) {
  const long long total = (long long)M * N;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const int j = static_cast<int>(e % N);
    Y[e] = __float2bfloat16_rn(fmaxf(acc[e] + __bfloat162float(bias[j]), 0.0f));
  }
}

// One handle and one scratch buffer per process (the worker calls the
// reference many times; creating a handle takes milliseconds). Never freed:
// they live as long as the worker's CUDA context.
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t made = nullptr;
    const cublasStatus_t s = cublasCreate(&made);
    require(s == CUBLAS_STATUS_SUCCESS, "cublasCreate", static_cast<int>(s));
    // Exact fp32 accumulation: no reduced-precision reductions in the GEMM.
    cublasSetMathMode(made, CUBLAS_DEFAULT_MATH);
    return made;
  }();
  return h;
}

float* scratch(size_t elements) {
  static float* buf = nullptr;
  static size_t capacity = 0;
  if (elements > capacity) {
    if (buf) cudaFree(buf);
    buf = nullptr;
    const cudaError_t e = cudaMalloc(&buf, elements * sizeof(float));
    require(e == cudaSuccess, "cudaMalloc of the fp32 scratch", static_cast<int>(e));
    capacity = elements;
  }
  return buf;
}

}  // namespace

extern "C" void gemm_bf16_bias_relu(const __nv_bfloat16* A, const __nv_bfloat16* B, const __nv_bfloat16* bias,
                                    __nv_bfloat16* Y, int32_t M, int32_t N, int32_t K) {
  float* acc = scratch(static_cast<size_t>(M) * static_cast<size_t>(N));
  cublasHandle_t h = handle();
  // The legacy default stream, as kevo's timing events use.
  cublasSetStream(h, nullptr);
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t s = cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16BF, N, A,
                                        CUDA_R_16BF, K, &beta, acc, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT);
  require(s == CUBLAS_STATUS_SUCCESS, "cublasGemmEx", static_cast<int>(s));
  const long long total = static_cast<long long>(M) * N;
  const int block = 256;
  const long long blocks = (total + block - 1) / block;
  bias_relu_kernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), block>>>(acc, bias, Y, M, N);
}
