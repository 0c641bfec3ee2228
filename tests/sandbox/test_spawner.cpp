// The spawner: registered commands only, exit codes and signals, output
// files, wall-clock kills of the whole group, programs that cannot start as
// results, cleanup when the caller ends, and use from a process under the
// seccomp policy (which itself may not fork).
#include "kevo/sandbox/spawner.hpp"

#include "kevo/core/error.hpp"
#include "kevo/sandbox/runner.hpp"
#include "kevo/sandbox/scratch_dir.hpp"
#include "kevo/sandbox/seccomp.hpp"

#include "probe.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

namespace sb = kevo::sandbox;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// True once `pid` no longer runs (gone, or a zombie nobody reaped yet).
bool ends_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    const auto close = stat.rfind(')');
    if (stat.empty() || (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z')) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

pid_t read_pid(const fs::path& p, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const std::string s = slurp(p);
    if (!s.empty() && s.back() == '\n') return static_cast<pid_t>(std::stol(s));
    if (std::chrono::steady_clock::now() > until) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

class SpawnerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = sb::ScratchDir::create(sb::default_scratch_base(), "kevo-spawner"); }
  fs::path at(const std::string& name) const { return dir_.path() / name; }
  sb::ScratchDir dir_;
};

}  // namespace

TEST_F(SpawnerTest, RunsItsCommandsAndSaysHowTheyEnded) {
  ::setenv("KEVO_SPAWNER_TEST", "from-the-caller", 1);
  sb::Spawner s({{{"/bin/true"}, "", 10},
                 {{"/bin/sh", "-c", "exit 7"}, "", 10},
                 {{"/bin/sh", "-c", "kill -TERM $$"}, "", 10},
                 {{"/bin/sh", "-c", "echo out; echo err >&2; echo $KEVO_SPAWNER_TEST"}, at("out.log"), 10}});
  ::unsetenv("KEVO_SPAWNER_TEST");
  EXPECT_EQ(s.size(), 4u);
  EXPECT_GT(s.pid(), 0);
  const sb::SpawnResult t = s.run(0);
  EXPECT_TRUE(t.started) << t.error;
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_EQ(t.signal, 0);
  EXPECT_FALSE(t.timed_out);
  EXPECT_EQ(s.run(1).exit_code, 7);
  const sb::SpawnResult k = s.run(2);
  EXPECT_EQ(k.signal, SIGTERM);
  EXPECT_EQ(k.exit_code, -1);
  EXPECT_EQ(s.run(3).exit_code, 0);
  // stdout and stderr in the output file; the caller's environment as it
  // was when the spawner started.
  EXPECT_EQ(slurp(at("out.log")), "out\nerr\nfrom-the-caller\n");
  // A command runs as often as asked; the output file starts empty each time.
  EXPECT_EQ(s.run(3).exit_code, 0);
  EXPECT_EQ(slurp(at("out.log")), "out\nerr\nfrom-the-caller\n");
}

// A command's own environment entries: set or replaced for it alone; the
// caller's environment and the other commands' stay as they were.
TEST_F(SpawnerTest, ACommandsEnvironmentEntriesAreItsAlone) {
  ::setenv("KEVO_SPAWNER_A", "caller-a", 1);
  ::setenv("KEVO_SPAWNER_B", "caller-b", 1);
  sb::SpawnCommand own{{"/bin/sh", "-c", "echo $KEVO_SPAWNER_A $KEVO_SPAWNER_B $KEVO_SPAWNER_C"}, at("own.log"), 10};
  own.env = {"KEVO_SPAWNER_A=mine", "KEVO_SPAWNER_C=new"};
  sb::Spawner s({own, {{"/bin/sh", "-c", "echo $KEVO_SPAWNER_A $KEVO_SPAWNER_B $KEVO_SPAWNER_C"}, at("other.log"), 10}});
  EXPECT_EQ(s.run(0).exit_code, 0);
  EXPECT_EQ(s.run(1).exit_code, 0);
  EXPECT_EQ(slurp(at("own.log")), "mine caller-b new\n");
  EXPECT_EQ(slurp(at("other.log")), "caller-a caller-b\n");
  EXPECT_STREQ(std::getenv("KEVO_SPAWNER_A"), "caller-a") << "the caller's environment is untouched";
  EXPECT_EQ(std::getenv("KEVO_SPAWNER_C"), nullptr);
  ::unsetenv("KEVO_SPAWNER_A");
  ::unsetenv("KEVO_SPAWNER_B");
  sb::SpawnCommand bad{{"/bin/true"}, "", 10};
  bad.env = {"NO_EQUALS_SIGN"};
  EXPECT_THROW(sb::Spawner({bad}), kevo::Failure);
}

TEST_F(SpawnerTest, PastItsLimitTheWholeGroupIsKilled) {
  const std::string pidfile = at("bg.pid").string();
  sb::Spawner s({{{"/bin/sh", "-c", "sleep 30 & echo $! > " + pidfile + "; wait"}, "", 0.4}});
  const auto t0 = std::chrono::steady_clock::now();
  // A request cannot raise the command's limit.
  const sb::SpawnResult r = s.run(0, 100);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_GE(r.wall_seconds, 0.4);
  EXPECT_LT(took, 5.0);
  const pid_t bg = read_pid(pidfile, std::chrono::milliseconds(100));
  ASSERT_GT(bg, 0);
  EXPECT_TRUE(ends_within(bg, std::chrono::milliseconds(3000))) << "the background sleep survived";
}

TEST_F(SpawnerTest, ARequestMayAskForLessTime) {
  sb::Spawner s({{{"/bin/sleep", "30"}, "", 60}});
  const sb::SpawnResult r = s.run(0, 0.2);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_seconds, 5.0);
}

TEST_F(SpawnerTest, ACommandThatCannotStartIsAResult) {
  sb::Spawner s({{{"/nonexistent/kevo-program"}, "", 10}, {{"/bin/true"}, at("no-such-dir/out.log"), 10}});
  const sb::SpawnResult e = s.run(0);
  EXPECT_FALSE(e.started);
  EXPECT_NE(e.error.find("execve"), std::string::npos) << e.error;
  EXPECT_NE(e.error.find("/nonexistent/kevo-program"), std::string::npos) << e.error;
  const sb::SpawnResult o = s.run(1);
  EXPECT_FALSE(o.started);
  EXPECT_NE(o.error.find("output file"), std::string::npos) << o.error;
  // The spawner serves on.
  EXPECT_EQ(s.run(0).started, false);
}

TEST_F(SpawnerTest, OnlyRegisteredCommandsRun) {
  sb::Spawner s({{{"/bin/true"}, "", 10}});
  EXPECT_THROW(s.run(1), kevo::Failure);
  sb::Spawner none;
  EXPECT_FALSE(none.valid());
  EXPECT_THROW(none.run(0), kevo::Failure);
  EXPECT_THROW(sb::Spawner({{{}, "", 10}}), kevo::Failure);
}

TEST_F(SpawnerTest, MovesAndStopsReapingTheSpawner) {
  sb::Spawner a({{{"/bin/true"}, "", 10}});
  const pid_t pid = a.pid();
  sb::Spawner b = std::move(a);
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.run(0).exit_code, 0);
  b.stop();
  EXPECT_FALSE(b.valid());
  // Reaped by stop(): not even a zombie is left.
  EXPECT_NE(::waitpid(pid, nullptr, WNOHANG), pid);
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(pid)));
}

TEST_F(SpawnerTest, StartsWhileOtherThreadsAllocate) {
  // The spawner process makes no allocation, so a lock another thread held
  // at the clone cannot hang it.
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < 3; ++i)
    ts.emplace_back([&stop] {
      while (!stop.load()) {
        std::vector<std::unique_ptr<char[]>> v;
        for (int k = 0; k < 64; ++k) v.emplace_back(new char[1024 + k]);
      }
    });
  int ok = 0;
  for (int i = 0; i < 10; ++i) {
    sb::Spawner s({{{"/bin/true"}, "", 10}});
    ok += s.run(0).exit_code == 0;
  }
  stop = true;
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok, 10);
}

using kevo::test::probe;

TEST_F(SpawnerTest, UnderTheCpuPolicyEvenTheSpawnersChannelIsAViolation) {
  // CPU kernel hosts never run tools: their allow-list has no socket calls
  // at all, not even on a socket made before it.
  const sb::Finished f = probe({"spawner", dir_.path().string()});
  kevo::test::expect_violation(f, "sendto");
}

TEST_F(SpawnerTest, WorksFromAProcessUnderTheCudaPolicyThatMayNotForkItself) {
  for (const std::string policy : {"--cuda"}) {
    std::vector<std::string> args = {policy, "spawner", dir_.path().string()};
    fs::remove(at("made.txt"));
    const sb::Finished f = probe(args);
    EXPECT_EQ(f.outcome, sb::Outcome::exited) << f.output;
    EXPECT_EQ(f.exit_code, sb::kViolationExitCode) << policy << ": " << f.output;
    std::istringstream lines(f.output);
    std::string l1, l2, l3, l4;
    std::getline(lines, l1);
    std::getline(lines, l2);
    std::getline(lines, l3);
    std::getline(lines, l4);
    EXPECT_EQ(l1, "true started 1 exit 0 signal 0 timed_out 0") << policy;
    EXPECT_EQ(l2, "write started 1 exit 0 signal 0 timed_out 0") << policy;
    EXPECT_EQ(l3, "out started 1 exit 3 signal 0 timed_out 0") << policy;
    // The probe's own fork afterwards is a violation.
    ASSERT_EQ(l4.rfind("violation ", 0), 0u) << policy << ": " << f.output;
    EXPECT_NE(sb::forbidden_syscall_name(std::stol(l4.substr(10))).find("clone"), std::string::npos) << l4;
    EXPECT_EQ(slurp(at("made.txt")), "made\n") << policy;
    EXPECT_EQ(slurp(at("out.log")), "out\nerr\n") << policy;
  }
}

TEST_F(SpawnerTest, WhenTheCallerIsKilledTheSpawnerAndItsCommandEnd) {
  const sb::Finished f = probe({"--cuda", "spawner-long", dir_.path().string()}, 1.5);
  EXPECT_EQ(f.outcome, sb::Outcome::timeout) << f.output;
  ASSERT_EQ(f.output.rfind("spawner ", 0), 0u) << f.output;
  const pid_t spawner = static_cast<pid_t>(std::stol(f.output.substr(8)));
  const pid_t command = read_pid(at("long.pid"), std::chrono::milliseconds(100));
  ASSERT_GT(command, 0);
  EXPECT_TRUE(ends_within(command, std::chrono::milliseconds(3000))) << "the command outlived its caller";
  EXPECT_TRUE(ends_within(spawner, std::chrono::milliseconds(3000))) << "the spawner outlived its caller";
}

// A confined command (SpawnCommand::confined: Landlock put on in its
// process before execve) and everything it starts read only beneath its
// read folders and write only beneath its write folders; the same command
// unconfined reads and writes both, the control. The CUDA worker's ncu
// child is started this way, so that the candidate it runs cannot read the
// task's hidden shapes (docs/cuda.md#profiler-feedback).
TEST_F(SpawnerTest, AConfinedCommandAndItsChildrenReadAndWriteOnlyWhereAllowed) {
  for (const char* d : {"allowed", "secret", "out"}) fs::create_directories(at(d));
  std::ofstream(at("allowed") / "a.txt") << "allowed-text\n";
  std::ofstream(at("secret") / "s.txt") << "secret-text\n";
  const std::string script = "cat " + (at("allowed") / "a.txt").string() + "; /bin/sh -c 'cat " +
                             (at("secret") / "s.txt").string() + "'; echo w > " + (at("out") / "w.txt").string() +
                             "; echo x > " + (at("allowed") / "x.txt").string() + "; echo done";
  sb::SpawnCommand open_cmd{{"/bin/sh", "-c", script}, at("open.log"), 10};
  sb::SpawnCommand confined = {{"/bin/sh", "-c", script}, at("confined.log"), 10};
  confined.confined = true;
  confined.read_dirs = {"/bin", "/usr", "/lib", "/lib64", "/etc", at("allowed").string()};
  confined.write_dirs = {at("out").string()};
  sb::Spawner s({open_cmd, confined});

  ASSERT_EQ(s.run(0).exit_code, 0);
  const std::string open_out = slurp(at("open.log"));
  EXPECT_NE(open_out.find("secret-text"), std::string::npos) << open_out;
  EXPECT_TRUE(fs::exists(at("allowed") / "x.txt"));
  fs::remove(at("allowed") / "x.txt");
  fs::remove(at("out") / "w.txt");

  const sb::SpawnResult r = s.run(1);
  ASSERT_TRUE(r.started) << r.error;
  const std::string out = slurp(at("confined.log"));
  EXPECT_NE(out.find("allowed-text"), std::string::npos) << out;
  EXPECT_EQ(out.find("secret-text"), std::string::npos) << "a confined command's child read outside its folders:\n" << out;
  EXPECT_NE(out.find("done"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(at("out") / "w.txt")) << out;
  EXPECT_FALSE(fs::exists(at("allowed") / "x.txt")) << "a confined command wrote outside its write folders:\n" << out;
}
