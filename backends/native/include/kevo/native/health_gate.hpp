// The device health check a native backend runs after an accelerator error
// (a CUDA error in a worker's judgement): whether the rank goes on judging
// on that device. One failed check does not end it: another worker's
// candidate may hold the device's memory at that moment (one that filled
// it, for one), so new judgements wait, and once none of this backend's is
// running the check is made again after a pause, up to `attempts` checks in
// all; only then is the device given up (docs/cuda.md#health-check).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace kevo::native {

class HealthGate {
 public:
  using Clock = std::chrono::steady_clock;
  // "" when the device is well, else what failed.
  using Check = std::function<std::string()>;

  HealthGate(std::string device, Check check, int attempts = 3,
             std::chrono::milliseconds pause = std::chrono::milliseconds(2000));

  // After a judgement that met a device error: the first check, at once.
  void device_error(Clock::time_point now = Clock::now());
  // From the scheduling loop: a pending check made again once no
  // judgement of this backend runs (`running`) and the pause has passed.
  void tick(std::size_t running, Clock::time_point now = Clock::now());
  // New judgements wait while a failed check is to be made again.
  bool holding() const { return suspect_; }
  // Set once every check failed: why no further candidate is judged.
  const std::string& given_up() const { return given_up_; }
  int checks() const { return checks_; }

 private:
  void run(Clock::time_point now);

  std::string device_;
  Check check_;
  int attempts_;
  std::chrono::milliseconds pause_;
  bool suspect_ = false;
  int failed_ = 0;   // failed checks since the last device error
  int checks_ = 0;
  Clock::time_point next_try_{};
  std::string last_why_, given_up_;
};

}  // namespace kevo::native
