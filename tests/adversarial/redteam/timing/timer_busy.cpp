// Computes honestly, but keeps the reference from running at full speed:
// a POSIX timer (timer_create, allowed) whose signal is SIGCONT resumes
// the host 20 ms after each answer, while the judge believes it stopped
// (a SIGCONT handler notes the resume). Two threads then stream through
// 64 MiB each (both cores, memory bandwidth) while the judge flushes its
// caches and times the reference, until the next call.
#include <atomic>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> g_in_call{false}, g_resumed{false};
timer_t g_timer;
bool g_started = false;

void on_cont(int) { g_resumed.store(true); }

void hog() {
  std::vector<std::uint64_t> buf((64u << 20) / 8, 1);
  std::uint64_t s = 0;
  for (;;) {
    while (!g_resumed.load() || g_in_call.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    while (!g_in_call.load(std::memory_order_relaxed))
      for (std::size_t i = 0; i < buf.size() && !g_in_call.load(std::memory_order_relaxed); i += 64)
        for (std::size_t k = i; k < i + 64; k += 8) {
          s += buf[k];
          buf[k] = s;
        }
  }
}

}  // namespace

extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  g_in_call.store(true);
  if (!g_started) {
    g_started = true;
    struct sigaction sa {};
    sa.sa_handler = on_cont;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCONT, &sa, nullptr);
    sigevent sev{};
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = SIGCONT;
    timer_create(CLOCK_MONOTONIC, &sev, &g_timer);
    for (int t = 0; t < 2; ++t) std::thread(hog).detach();
  }
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
  itimerspec its{};
  its.it_value.tv_nsec = 20000000;   // one shot, 20 ms after this answer
  timer_settime(g_timer, 0, &its, nullptr);
  g_resumed.store(false);
  g_in_call.store(false);
}
