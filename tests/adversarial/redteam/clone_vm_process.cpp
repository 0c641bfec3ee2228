// clone(CLONE_VM | SIGCHLD) without CLONE_THREAD: a process that shares
// the host's memory but is not a thread of it (it would survive the
// judge's freeze of the host). A violation.
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <csignal>
#include <cstdint>

namespace {
long raw_clone(unsigned long flags, void* stack) {
  long ret;
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "mov $60, %%eax\n\t"
      "xor %%edi, %%edi\n\t"
      "syscall\n\t"
      "1:"
      : "=a"(ret)
      : "a"(SYS_clone), "D"(flags), "S"(stack), "d"(0)
      : "rcx", "r11", "memory");
  return ret;
}
}  // namespace

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  void* stack = ::mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  raw_clone(CLONE_VM | SIGCHLD, static_cast<char*>(stack) + 65536);
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
}
