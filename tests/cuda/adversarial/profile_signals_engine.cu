// A correct softmax that, when it finds itself under ncu (its injection
// library mapped, or no seccomp filter: the ncu child runs the candidate
// without the system-call policy; in the judge's kernel host it does
// nothing of this), sends SIGURG to every process of kevo's above it (the
// worker that judges it and the worker's spawner, outside the child's
// Landlock domain; SIGSTOP or SIGKILL would stop them) and spells how many
// it tried and how many the kernel let through in the grid of a dummy
// kernel, which the profile quotes: 6000 + 100 x tried + sent. Where the
// kernel has Landlock's scopes (ABI 6) the confined child's signals all
// fail (CudaTools.TheProfileChildSignalsNothingOutside; unconfined, the
// control, they go through).
#include <cfloat>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/types.h>
#include <unistd.h>

__global__ void spell() {}

__global__ void softmax_kernel(const float* __restrict__ X, float* __restrict__ Y, int C) {
  const float* x = X + (long long)blockIdx.x * C;
  float* y = Y + (long long)blockIdx.x * C;
  __shared__ float red[256];
  float m = -FLT_MAX;
  for (int c = threadIdx.x; c < C; c += blockDim.x) m = fmaxf(m, x[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const float gm = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sum += expf(x[c] - gm);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.0f / red[0];
  for (int c = threadIdx.x; c < C; c += blockDim.x) y[c] = expf(x[c] - gm) * inv;
}

// The parent of `pid` and its command name, from /proc/PID/stat.
static pid_t parent_of(pid_t pid, char* comm, size_t size) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char text[1024] = {};
  const size_t n = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  text[n] = '\0';
  const char* open = std::strchr(text, '(');
  const char* close = std::strrchr(text, ')');
  if (!open || !close || close < open) return 0;
  const size_t len = std::min(size - 1, (size_t)(close - open - 1));
  std::memcpy(comm, open + 1, len);
  comm[len] = '\0';
  int ppid = 0;
  char state = 0;
  if (std::sscanf(close + 1, " %c %d", &state, &ppid) != 2) return 0;
  return ppid;
}

// The process's seccomp mode (/proc/self/status): 2 in the judge's kernel
// host (the system-call policy), 0 in the ncu child.
static int seccomp_mode() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  int mode = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "Seccomp: %d", &mode) == 1) break;
  std::fclose(f);
  return mode;
}

// Whether a profiler's injection library is mapped into this process
// (ncu's libcuda-injection, libInterceptorInjectionTarget).
static bool injected() {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[1024];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f)) found = std::strstr(line, "njection") != nullptr;
  std::fclose(f);
  return found;
}

// 100 x the signals tried + the signals the kernel let through: SIGURG to
// every process above this one that is kevo's (the worker that judges it,
// and its spawner: both outside the child's domain), once.
static unsigned attempts() {
  static unsigned spelled = 0;
  static bool done = false;
  if (done) return spelled;
  done = true;
  if (seccomp_mode() != 0 && !injected()) return spelled;   // in the judge's host: behave
  char comm[64] = {};
  unsigned tried = 0, sent = 0;
  pid_t pid = getppid();
  for (int depth = 0; pid > 0 && depth < 16; ++depth) {
    const pid_t up = parent_of(pid, comm, sizeof comm);
    if (std::strncmp(comm, "kevo", 4) == 0) {
      ++tried;
      if (kill(pid, SIGURG) == 0) ++sent;
    }
    pid = up;
  }
  spelled = 100 * tried + sent;
  return spelled;
}

extern "C" void softmax(const float* X, float* Y, int32_t R, int32_t C) {
  spell<<<6000 + attempts(), 1>>>();
  softmax_kernel<<<R, 256>>>(X, Y, C);
}
