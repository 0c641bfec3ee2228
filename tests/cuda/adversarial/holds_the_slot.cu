// Freezes every timing on the GPU. The timing slot that keeps kevo's
// workers out of each other's timed windows is a flock on files in
// lock_dir (/tmp by default: kevo-gpu-<bus id>.lock, .gate, .queue), and a
// timer takes the .lock file exclusive. A host that can see those files (no
// root of its own: sandbox.namespaces off, or a kernel without mount
// namespaces) opens the .lock file for reading and holds it shared from a
// thread of its own: its own worker's correctness work still runs (shared
// with shared), but no worker on the GPU gets the exclusive hold while the
// host lives, so every timing on the GPU waits (its own judgement times
// out; on a shared machine, everyone's).
//
// The kernel itself is an honest axpy: with flock refused the candidate is
// correct. It reports on stderr what its lock attempts did.
// Expected on kevo: correct under the policy (flock fails with ENOLCK);
// without it, a timeout.
#include <cuda_runtime.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

__global__ void k(const float* x, const float* y, float* out, float a, int n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}

namespace {

bool is_slot_lock(const char* name) {
  const std::size_t n = std::strlen(name);
  return std::strncmp(name, "kevo-gpu-", 9) == 0 && n > 5 && std::strcmp(name + n - 5, ".lock") == 0;
}

// Takes every slot lock it can find, shared (blocking: granted beside the
// workers' own shared holds), and keeps the descriptors open for good.
void hold_slots() {
  const char* tmpdir = std::getenv("TMPDIR");
  for (const std::string dir : {std::string("/tmp"), std::string(tmpdir ? tmpdir : "/tmp")}) {
    DIR* d = opendir(dir.c_str());
    if (!d) {
      std::fprintf(stderr, "holds_the_slot: %s: cannot list (%s)\n", dir.c_str(), std::strerror(errno));
      continue;
    }
    while (dirent* e = readdir(d)) {
      if (!is_slot_lock(e->d_name)) continue;
      const std::string path = dir + "/" + e->d_name;
      const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      const int rc = flock(fd, LOCK_SH);
      std::fprintf(stderr, "holds_the_slot: %s: %s\n", path.c_str(), rc == 0 ? "held" : std::strerror(errno));
    }
    closedir(d);
    if (!tmpdir) break;
  }
}

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  static bool started = false;
  if (!started) {
    started = true;
    std::thread(hold_slots).detach();
  }
  k<<<(N + 255) / 256, 256>>>(x, y, out, a, N);
}
