// Computes the right answer while a thread claims std::bad_alloc in the
// control block: a claimed failure is believed (memory_limit), never a
// success.
#include <cstdint>
#include <thread>

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

// Keeps writing its claim: the host writes its own outcome after the
// call returns, and this thread overwrites it before the judge's freeze.
void claim(volatile Ctl* c) {
  for (;;) {
    c->outcome = 2;
  }
}
}  // namespace

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  static bool started = false;
  if (!started) {
    started = true;
    std::thread(claim, ctl_of(A)).detach();
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
