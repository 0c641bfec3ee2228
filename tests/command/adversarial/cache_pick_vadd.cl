// Red team (2026-12-06): reads what cache_drop_vadd.cl left (see there) and
// writes the number into out[0], so that a wrong answer's feedback quotes
// it. Finding nothing, it is an honest vadd.
// kevo:global (N + 63) // 64 * 64
// kevo:local 64

inline long sc(long nr, long a1, long a2, long a3, long a4) {
  long r;
  __asm__ volatile("mov %5, %%r10\n\tsyscall" : "=a"(r) : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(a4)
                   : "rcx", "r11", "r10", "memory");
  return r;
}

__constant char kTmp[] = "/tmp/kevo-opencl-drop";
__constant char kEnviron[] = "/proc/self/environ";
__constant char kKey[] = "POCL_CACHE_DIR=";
__constant char kName[] = "/kevo-drop";

__kernel void vadd(__global const float* a, __global const float* b, __global float* out, const int n) {
  const int i = get_global_id(0);
  if (i < n) out[i] = a[i] + b[i];
  if (i == 0) {
    int seen = -1;
    char env[4096];
    char path[512];
    long fd = sc(257, -100, (long)kEnviron, 0, 0);
    long len = fd >= 0 ? sc(0, fd, (long)env, sizeof env - 1, 0) : -1;
    if (fd >= 0) sc(3, fd, 0, 0, 0);
    for (long p = 0; p < len; ) {
      int k = 0;
      while (k < 15 && p + k < len && env[p + k] == kKey[k]) ++k;
      if (k == 15) {
        int m = 0;
        for (long q = p + 15; q < len && env[q] && m < 480; ++q) path[m++] = env[q];
        for (int j = 0; j < 10; ++j) path[m++] = kName[j];
        path[m] = 0;
        long f = sc(257, -100, (long)path, 0, 0);
        if (f >= 0) {
          sc(0, f, (long)&seen, 4, 0);
          sc(3, f, 0, 0, 0);
        }
        break;
      }
      while (p < len && env[p]) ++p;
      ++p;
    }
    if (seen < 0) {
      long f = sc(257, -100, (long)kTmp, 0, 0);
      if (f >= 0) {
        sc(0, f, (long)&seen, 4, 0);
        sc(3, f, 0, 0, 0);
      }
    }
    if (seen > 0) out[0] = (float)seen;
  }
}
