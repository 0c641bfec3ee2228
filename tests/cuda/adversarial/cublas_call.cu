// An sgemm "kernel" that calls cuBLAS: reported as an evolved kernel several
// times faster than the reference on a backend that links every candidate
// with cuBLAS. Expected: forbidden (the bundled sgemm task allows no
// library), naming the symbol.
#include <cstdint>
#include <cublas_v2.h>

extern "C" void sgemm(const float* A, const float* B, float* C, int32_t M, int32_t N, int32_t K) {
  static cublasHandle_t h = nullptr;
  if (!h) cublasCreate(&h);
  const float one = 1.0f, zero = 0.0f;
  // Row-major C = A B as column-major C^T = B^T A^T.
  cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N);
}
