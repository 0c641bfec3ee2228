// Computes the right answer, then punches a hole in its input pages
// (madvise MADV_REMOVE on the shared memfd, allowed): the pages are freed
// for every mapping, so the judge's view of A reads zeros. The judge's
// input check compares with its own pristine copy: input modified.
#include <cstdint>
#include <sys/mman.h>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
  ::madvise(const_cast<float*>(A), (static_cast<std::size_t>(M) * N * 4) / 4096 * 4096, MADV_REMOVE);
}
