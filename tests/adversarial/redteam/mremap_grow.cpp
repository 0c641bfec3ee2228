// Grows its view of the arena past the memfd's end (mremap, allowed)
// and touches the new pages: SIGBUS, its own.
#include <cstdint>
#include <sys/mman.h>

namespace {
char* arena_of(const float* A) { return reinterpret_cast<char*>(const_cast<float*>(A)) - 4096; }
}  // namespace

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
  const std::size_t have = 4096 + (static_cast<std::size_t>(M) * N * 4 + 4095) / 4096 * 4096;
  void* p = ::mremap(arena_of(A), have, have + (64u << 20), MREMAP_MAYMOVE);
  if (p != MAP_FAILED) static_cast<volatile char*>(p)[have + (32u << 20)] = 1;
}
