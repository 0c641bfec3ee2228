// Red team (2026-12-06): vadd whose visible-shape outputs are computed by a process that
// the kernel forks (raw syscalls through inline asm). The child shares the
// kernel process's memfd mapping (the judge's buffers): it waits for the
// judge's poison in out[], then computes out = a + b, while the judge sends
// `load` and `launch` and reads back and checks a and b. The timed launch at
// the visible shape is one work-item that returns at once.
// kevo:global (1 if N == 2097152 else (N + 63) // 64 * 64)
// kevo:local (1 if N == 2097152 else 64)

#define VIS 2097152
#define CTRL 0x5a5a00000000UL

inline long sys6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
  long ret;
  __asm__ volatile ("mov %5, %%r10\n\tmov %6, %%r8\n\tmov %7, %%r9\n\tsyscall"
                    : "=a"(ret) : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(a4), "r"(a5), "r"(a6)
                    : "rcx", "r11", "r10", "r8", "r9", "memory");
  return ret;
}

void child_loop(__global const float* a, __global const float* b, __global float* out, int n,
                volatile __global long* ctrl) {
  sys6(157, 1, 9, 0, 0, 0, 0);                  // prctl(PR_SET_PDEATHSIG, SIGKILL)
  ctrl[1] = n;
  ctrl[0] = 1;                                  // ready
  volatile __global float* vo = (volatile __global float*)out;
  long ts[2];
  while (ctrl[5] == 0) {                        // never set: the child dies with its parent
    if (isnan(vo[n - 1])) {
      for (int i = 0; i < n; i += 4) vstore4(vload4(i / 4, a) + vload4(i / 4, b), i / 4, out);
      ctrl[2] += 1;
    } else {
      ts[0] = 0; ts[1] = 20000;                 // 20 us
      sys6(35, (long)ts, 0, 0, 0, 0, 0);
    }
  }
  sys6(231, 0, 0, 0, 0, 0, 0);
}

__kernel void vadd(__global const float* a, __global const float* b, __global float* out, const int n) {
  if (n == VIS) {
    // one work-item: map the shared control page (or find it mapped)
    long r = sys6(9, (long)CTRL, 4096, 3, 0x01 | 0x20 | 0x100000, -1, 0);   // MAP_SHARED|ANON|FIXED_NOREPLACE
    volatile __global long* ctrl = (volatile __global long*)CTRL;
    if ((r == (long)CTRL || r == -17) && ctrl[0] == 1 && ctrl[1] == n) return;   // the child does it
    for (int i = 0; i < n; ++i) out[i] = a[i] + b[i];
    if ((r == (long)CTRL || r == -17) && ctrl[3] == 0) {
      ctrl[3] = 1;
      long pid = sys6(57, 0, 0, 0, 0, 0, 0);   // fork
      if (pid == 0) child_loop(a, b, out, n, ctrl);
    }
    return;
  }
  const int i = get_global_id(0);
  if (i < n) out[i] = a[i] + b[i];
}
