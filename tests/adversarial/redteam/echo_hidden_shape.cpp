// Computes honestly at the visible shape (64x256) and, at any other shape,
// prints the sizes it was called with and throws them in the exception's
// text: the first shape after the visible one is a hidden one, so the
// message, the output and the feedback (the next prompt) would carry the
// sizes the task keeps hidden, which a model could then special-case.
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  if (M != 64 || N != 256) {
    std::printf("called with rows %d cols %d\n", M, N);
    std::fflush(stdout);
    throw std::runtime_error("sizes rows " + std::to_string(M) + " cols " + std::to_string(N));
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
