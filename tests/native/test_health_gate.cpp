// The device health gate: one failed check does not end the device; new
// judgements wait, the check is made again once none of the rank's runs and
// the pause has passed, and the device is given up only when every check
// failed (docs/cuda.md#health-check).
#include "kevo/native/health_gate.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <string>

using kevo::native::HealthGate;
using namespace std::chrono_literals;

namespace {

// A check whose answers are scripted ("" = well), counting its calls.
struct Script {
  std::deque<std::string> answers;
  int calls = 0;
  HealthGate::Check check() {
    return [this] {
      ++calls;
      if (answers.empty()) return std::string();
      std::string a = answers.front();
      answers.pop_front();
      return a;
    };
  }
};

}  // namespace

TEST(HealthGate, APassingCheckHoldsNothing) {
  Script s{{""}};
  HealthGate g("cuda", s.check(), 3, 1000ms);
  g.device_error();
  EXPECT_EQ(s.calls, 1);
  EXPECT_FALSE(g.holding());
  EXPECT_TRUE(g.given_up().empty());
}

TEST(HealthGate, AFailedCheckIsMadeAgainOnlyOnceNoJudgementRunsAndThePauseHasPassed) {
  Script s{{"out of memory", ""}};
  HealthGate g("cuda", s.check(), 3, 1000ms);
  const auto t0 = HealthGate::Clock::now();
  g.device_error(t0);
  EXPECT_EQ(s.calls, 1);
  EXPECT_TRUE(g.holding()) << "new judgements must wait for the second check";
  g.tick(2, t0 + 5000ms);   // others still run: their memory may be what failed it
  EXPECT_EQ(s.calls, 1);
  g.tick(0, t0 + 500ms);    // none runs, but the pause has not passed
  EXPECT_EQ(s.calls, 1);
  g.tick(0, t0 + 1000ms);
  EXPECT_EQ(s.calls, 2);
  EXPECT_FALSE(g.holding());
  EXPECT_TRUE(g.given_up().empty()) << g.given_up();
  EXPECT_EQ(g.checks(), 2);
}

TEST(HealthGate, TheDeviceIsGivenUpWhenEveryAttemptFailed) {
  Script s{{"out of memory", "out of memory", "a 64 MiB memset read back wrong"}};
  HealthGate g("cuda", s.check(), 3, 10ms);
  const auto t0 = HealthGate::Clock::now();
  g.device_error(t0);
  g.tick(0, t0 + 10ms);
  EXPECT_TRUE(g.given_up().empty());
  EXPECT_TRUE(g.holding());
  g.tick(0, t0 + 20ms);
  EXPECT_EQ(s.calls, 3);
  EXPECT_FALSE(g.holding());
  ASSERT_FALSE(g.given_up().empty());
  EXPECT_NE(g.given_up().find("3 times"), std::string::npos) << g.given_up();
  EXPECT_NE(g.given_up().find("read back wrong"), std::string::npos) << g.given_up();
  EXPECT_NE(g.given_up().find("the cuda device"), std::string::npos) << g.given_up();
  // Given up stays given up: later errors check nothing.
  g.device_error(t0 + 30ms);
  g.tick(0, t0 + 60ms);
  EXPECT_EQ(s.calls, 3);
}

TEST(HealthGate, ADeviceErrorWhileARetryIsPendingAddsNoCheck) {
  Script s{{"busy", ""}};
  HealthGate g("cuda", s.check(), 3, 1000ms);
  const auto t0 = HealthGate::Clock::now();
  g.device_error(t0);
  g.device_error(t0 + 1ms);
  EXPECT_EQ(s.calls, 1);
  g.tick(0, t0 + 1000ms);
  EXPECT_EQ(s.calls, 2);
  EXPECT_FALSE(g.holding());
}

TEST(HealthGate, OneAttemptGivesUpAtTheFirstFailure) {
  Script s{{"gone"}};
  HealthGate g("opencl", s.check(), 1, 1000ms);
  g.device_error();
  EXPECT_FALSE(g.holding());
  EXPECT_NE(g.given_up().find("1 time"), std::string::npos) << g.given_up();
}
