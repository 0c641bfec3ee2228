#include "probe_wait.hpp"

#include "kevo/core/ncu_summary.hpp"

#include <stdexcept>
#include <string>

namespace kevo::cuda::worker {

double wait_until_quiet(std::chrono::steady_clock::time_point answered, double quiet_ns, double limit_seconds,
                        const std::function<void()>& probe) {
  using Clock = std::chrono::steady_clock;
  const auto limit = std::chrono::duration<double>(limit_seconds);
  probe();
  Clock::time_point end = Clock::now();
  while (quiet_ns > 0) {
    if (end - answered > limit)
      throw std::runtime_error("GPU work of the candidate's process still ran " + format_number(limit_seconds) +
                               " s after its answer (the judge's probes after the call kept waiting for it)");
    const Clock::time_point start = Clock::now();
    probe();
    const Clock::time_point now = Clock::now();
    if (std::chrono::duration<double, std::nano>(now - start).count() <= quiet_ns) break;
    end = now;
  }
  return std::chrono::duration<double, std::nano>(end - answered).count();
}

double held_up_ns(double quiet_ns, double limit_seconds, const std::function<void()>& probe) {
  using Clock = std::chrono::steady_clock;
  if (quiet_ns <= 0) throw std::logic_error("held_up_ns without a quiet threshold");
  const auto limit = std::chrono::duration<double>(limit_seconds);
  const Clock::time_point first = Clock::now();
  Clock::time_point end = first;
  for (;;) {
    const Clock::time_point start = Clock::now();
    probe();
    const Clock::time_point now = Clock::now();
    if (std::chrono::duration<double, std::nano>(now - start).count() <= quiet_ns) break;
    end = now;
    if (end - first > limit)
      throw std::runtime_error("GPU work of the candidate's process ran " + format_number(limit_seconds) +
                               " s after the judge's input fill (the judge's probes kept waiting for it)");
  }
  return std::chrono::duration<double, std::nano>(end - first).count();
}

}  // namespace kevo::cuda::worker
