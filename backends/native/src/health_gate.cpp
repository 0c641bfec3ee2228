#include "kevo/native/health_gate.hpp"

#include <algorithm>
#include <utility>

namespace kevo::native {

HealthGate::HealthGate(std::string device, Check check, int attempts, std::chrono::milliseconds pause)
    : device_(std::move(device)), check_(std::move(check)), attempts_(std::max(attempts, 1)), pause_(pause) {}

void HealthGate::device_error(Clock::time_point now) {
  // Given up already, or a retry pending (it will look at the device).
  if (!given_up_.empty() || suspect_) return;
  failed_ = 0;
  run(now);
}

void HealthGate::tick(std::size_t running, Clock::time_point now) {
  if (!suspect_ || running > 0 || now < next_try_) return;
  run(now);
}

void HealthGate::run(Clock::time_point now) {
  ++checks_;
  const std::string why = check_();
  if (why.empty()) {
    suspect_ = false;
    failed_ = 0;
    return;
  }
  last_why_ = why;
  if (++failed_ < attempts_) {
    suspect_ = true;
    next_try_ = now + pause_;
    return;
  }
  suspect_ = false;
  given_up_ = "the " + device_ + " device failed its health check after an error, " + std::to_string(failed_) +
              (failed_ == 1 ? " time" : " times") +
              (failed_ > 1 ? ", the last with no other judgement of this rank running" : "") + " (" + last_why_ +
              "); no further candidates are judged on it";
}

}  // namespace kevo::native
