// Computes honestly everywhere until it has been called at a shape other
// than the visible one (64x256), which it remembers; the next time the
// visible shape comes (the next trial), it prints the shapes it saw and
// throws them in the exception's text. The failure is at a visible shape,
// so a feedback that was redacted only for failures at hidden shapes
// carried the hidden sizes into the next prompt (red team 22).
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

static std::string seen;

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  const bool visible = M == 64 && N == 256;
  if (visible && !seen.empty()) {
    std::printf("shapes seen:%s\n", seen.c_str());
    std::fflush(stdout);
    throw std::runtime_error("shapes seen:" + seen);
  }
  if (!visible) seen += " rows " + std::to_string(M) + " cols " + std::to_string(N) + ";";
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
