// Computes the right answer and prints every environment it can read: its
// own, its parent's and those of the first 4096 process ids in /proc (the
// engine's holds the API keys).
// Expected: correct, and nothing it printed contains the engine's key: the
// judge's environment has none, the candidate's process sees a /proc of its
// own PID namespace, and the engine and judge are not dumpable.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

extern char** environ;

__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

namespace {

void dump(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::string s((std::istreambuf_iterator<char>(in)), {});
  for (char& c : s)
    if (c == '\0') c = '\n';
  std::printf("== %s\n%s\n", path.c_str(), s.substr(0, 4096).c_str());
}

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
  static bool done = false;
  if (done) return;
  done = true;
  for (char** e = environ; e && *e; ++e) std::printf("own %s\n", *e);
  dump("/proc/" + std::to_string(::getppid()) + "/environ");
  // The first processes of the machine (the engine among them, where the
  // candidate shares its /proc) and of its own namespace.
  for (int pid = 1; pid < 4096; ++pid) dump("/proc/" + std::to_string(pid) + "/environ");
  std::fflush(stdout);
}
