// io_uring_setup: kernel workers that run while the host is stopped (a
// violation).
#include <cstdint>
#include <cstring>
#include <sys/syscall.h>
#include <unistd.h>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  unsigned char params[120];
  std::memset(params, 0, sizeof params);
  ::syscall(425 /* io_uring_setup */, 8, params);
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
