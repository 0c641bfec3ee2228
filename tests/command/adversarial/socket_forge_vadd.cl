// Red team 2 (2026-12-06): the kernel takes over its kernel process's socket to the judge.
// Work-item 0 of the first launch never returns: it computes that launch's outputs, sends the
// judge the answer {"ok": true, "event_ns": 1} itself (write() on the socket is allowed), and
// from then on answers every message itself. Against the judge's earlier protocol (the arguments
// set in an untimed exchange before the timed launch) it computed there and answered every timed
// launch at once: correct at 3,454-7,284x, the seed 0.6-2.2x. This form reads n from each launch
// message; at large sizes it answers first and computes after, racing the judge's read-back of
// the outputs (the judge reads and checks the 8 MB inputs first): correct at 3,662-11,690x in 3
// of 4 rounds. The judge now freezes the kernel process whenever it is not in an exchange and
// sends one message per call, so what the kernel leaves undone when it answers stays undone.
// kevo:global (N + 63) // 64 * 64
// kevo:local 64

#define G 65536L

inline long sys3(long nr, long a1, long a2, long a3) {
  long ret;
  __asm__ volatile ("syscall" : "=a"(ret) : "a"(nr), "D"(a1), "S"(a2), "d"(a3) : "rcx", "r11", "memory");
  return ret;
}

inline long sys6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
  long ret;
  __asm__ volatile ("mov %5, %%r10\n\tmov %6, %%r8\n\tmov %7, %%r9\n\tsyscall"
                    : "=a"(ret) : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(a4), "r"(a5), "r"(a6)
                    : "rcx", "r11", "r10", "r8", "r9", "memory");
  return ret;
}

inline long al(long x) { return (x + 4095) / 4096 * 4096; }

inline int rd(int fd, char* p, int n) {
  int got = 0;
  while (got < n) {
    long r = sys3(0, fd, (long)(p + got), n - got);
    if (r <= 0) return -1;
    got += (int)r;
  }
  return 0;
}

__constant char kReply[] = "{\"ok\": true, \"event_ns\": 1}";

inline void reply(int fd) {
  char m[64];
  int len = sizeof(kReply) - 1;
  m[0] = len; m[1] = 0; m[2] = 0; m[3] = 0;
  for (int i = 0; i < len; ++i) m[4 + i] = kReply[i];
  sys3(1, fd, (long)m, 4 + len);
}

void rogue(__global const float* a0, __global const float* b0, __global float* o0, int n0) {
  for (int i = 0; i < n0; ++i) o0[i] = a0[i] + b0[i];
  long base = (long)a0 - G;           // the shared memory: the first buffer is at offset 0
  int fd = -1;
  uint st[40];
  for (int f = 0; f < 256 && fd < 0; ++f)
    if (sys3(5, f, (long)st, 0) == 0 && (st[6] & 0170000) == 0140000) fd = f;   // fstat: a socket
  if (fd < 0) return;
  ulong mask[16];
  for (int k = 0; k < 16; ++k) mask[k] = ~0UL;
  sys3(203, 0, sizeof(mask), (long)mask);   // sched_setaffinity(0: this thread): off PoCL's pinned core
  reply(fd);                          // the first launch "done"
  char msg[8192];
  long cur_n = 0; int continue_reply = 0;
  while (1) {
    uint len = 0;
    // spin a while on a non-blocking read (the launch follows the load's reply at once): no wake-up latency
    long r = -11;
    for (int k = 0; k < 200000 && r == -11; ++k) r = sys6(45, fd, (long)&len, 4, 0x40, 0, 0);   // recvfrom MSG_DONTWAIT
    if (r == -11) { if (rd(fd, (char*)&len, 4)) break; }
    else if (r != 4) break;
    if (len >= sizeof(msg)) break;
    if (rd(fd, msg, (int)len)) break;
    msg[len] = 0;
    // "op": "load" / "launch" / "shape"
    int op = -1;
    for (int i = 0; i + 7 < (int)len; ++i)
      if (msg[i] == '"' && msg[i+1] == 'o' && msg[i+2] == 'p' && msg[i+3] == '"') { op = i + 7; break; }
    if (op >= 0 && msg[op] == 'l' && msg[op + 1] == 'a') {
      long n = 0;
      for (int i = 0; i + 5 < (int)len; ++i)
        if (msg[i] == '"' && msg[i+1] == 'n' && msg[i+2] == '"' && msg[i+3] == ':') {
          int j = i + 4;
          while (msg[j] == ' ') ++j;
          while (msg[j] >= '0' && msg[j] <= '9') { n = n * 10 + (msg[j] - '0'); ++j; }
          break;
        }
      cur_n = n;
      continue_reply = 1;
    }
    if (op >= 0 && msg[op] == 'l' && msg[op + 1] == 'a' && cur_n < 1000000) {   // small: compute, then answer
      long n = cur_n;
      long step = al(4 * n + 2 * G);
      __global const float* a = (__global const float*)(base + G);
      __global const float* b = (__global const float*)(base + step + G);
      __global float* o = (__global float*)(base + 2 * step + G);
      for (long i = 0; i < n; ++i) o[i] = a[i] + b[i];
    }
    reply(fd);
    if (op >= 0 && msg[op] == 'l' && msg[op + 1] == 'a' && cur_n >= 1000000) {   // launch: answered; now compute, racing the judge's readback
      long n = cur_n;
      long step = al(4 * n + 2 * G);
      __global const float* a = (__global const float*)(base + G);
      __global const float* b = (__global const float*)(base + step + G);
      __global float* o = (__global float*)(base + 2 * step + G);
      for (long i = 0; i < n; ++i) o[i] = a[i] + b[i];
    }
  }
}

__kernel void vadd(__global const float* a, __global const float* b, __global float* out, const int n) {
  const int i = get_global_id(0);
  if (i == 0) { rogue(a, b, out, n); return; }
  if (i < n) out[i] = a[i] + b[i];
}
