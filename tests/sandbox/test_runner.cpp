// Unit tests of the sandbox runner: exit codes, signals, group kills on
// timeout, output caps, scratch directories, rlimits, channels, fd hygiene
// and reaping.
#include "kevo/sandbox/runner.hpp"

#include "kevo/core/error.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace sb = kevo::sandbox;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> base_env() { return {"PATH=/usr/bin:/bin", "LANG=C"}; }

sb::Spec sh(const std::string& script) {
  sb::Spec s;
  s.argv = {"/bin/sh", "-c", script};
  s.env = base_env();
  s.scratch_base = sb::default_scratch_base();
  s.limits.wall_seconds = 20;
  return s;
}

bool process_alive(pid_t pid) {
  // A zombie counts as gone: it no longer runs.
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

void expect_no_children() {
  int st;
  errno = 0;
  EXPECT_EQ(waitpid(-1, &st, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "a child of the test process was left behind";
}

std::int64_t limit_of(const std::string& limits, const std::string& name) {
  std::istringstream in(limits);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) == 0) {
      std::istringstream f(line.substr(name.size()));
      std::string soft;
      f >> soft;
      return soft == "unlimited" ? -1 : std::stoll(soft);
    }
  }
  return -2;
}

}  // namespace

TEST(Runner, ExitCodeAndOutput) {
  sb::Runner r;
  auto f = r.run(sh("echo hello; echo err >&2; exit 7"));
  EXPECT_EQ(f.outcome, sb::Outcome::exited);
  EXPECT_EQ(f.exit_code, 7);
  EXPECT_EQ(f.output, "hello\nerr\n");
  EXPECT_GE(f.wall_seconds, 0.0);
  expect_no_children();
}

TEST(Runner, SeparateStderr) {
  sb::Runner r;
  auto s = sh("echo out; echo err >&2");
  s.merge_stderr = false;
  auto f = r.run(std::move(s));
  EXPECT_EQ(f.output, "out\n");
  EXPECT_EQ(f.error_output, "err\n");
}

TEST(Runner, Signal) {
  sb::Runner r;
  auto f = r.run(sh("kill -SEGV $$"));
  EXPECT_EQ(f.outcome, sb::Outcome::signaled);
  EXPECT_EQ(f.signal, SIGSEGV);
  expect_no_children();
}

TEST(Runner, WallTimeoutKillsTheWholeGroup) {
  sb::Runner r;
  auto s = sh("sleep 100 & echo $!; sleep 100");
  s.limits.wall_seconds = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  auto f = r.run(std::move(s));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(f.outcome, sb::Outcome::timeout);
  EXPECT_EQ(f.signal, SIGKILL);
  EXPECT_LT(took, 5.0);
  pid_t grandchild = std::atoi(f.output.c_str());
  ASSERT_GT(grandchild, 0) << f.output;
  bool alive = true;
  for (int i = 0; i < 200 && alive; ++i) {
    alive = process_alive(grandchild);
    if (alive) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(alive) << "the sleeping grandchild survived the group kill";
  expect_no_children();
}

TEST(Runner, ExitWhileGrandchildHoldsThePipe) {
  // The child exits; a grandchild keeps stdout open. The runner must not
  // wait for EOF: it notices the exit and kills the rest of the group.
  sb::Runner r;
  auto s = sh("sleep 100 & echo started");
  s.limits.wall_seconds = 30;
  auto t0 = std::chrono::steady_clock::now();
  auto f = r.run(std::move(s));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(f.outcome, sb::Outcome::exited);
  EXPECT_EQ(f.output, "started\n");
  EXPECT_LT(took, 5.0);
}

TEST(Runner, OutputCapKills) {
  sb::Runner r;
  auto s = sh("while :; do echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; done");
  s.limits.output_bytes = 10000;
  auto f = r.run(std::move(s));
  EXPECT_EQ(f.outcome, sb::Outcome::output_limit);
  EXPECT_TRUE(f.output_capped);
  EXPECT_EQ(f.output.size(), 10000u);
  expect_no_children();
}

TEST(Runner, ResultPipeCapKills) {
  sb::Runner r;
  auto s = sh("yes >&4");
  s.result_fd = 4;
  s.limits.result_bytes = 5000;
  auto f = r.run(std::move(s));
  EXPECT_EQ(f.outcome, sb::Outcome::output_limit);
  EXPECT_EQ(f.result.size(), 5000u);
}

TEST(Runner, ScratchDirIsCwdAndTmpdirAndIsRemoved) {
  sb::Runner r;
  auto s = sh("pwd; echo \"$TMPDIR\"; cat given.txt; echo made > made.txt");
  s.files = {{"given.txt", "given\n"}};
  fs::path dir;
  {
    auto f = r.run(std::move(s));
    ASSERT_EQ(f.exit_code, 0) << f.output;
    dir = f.scratch.path();
    ASSERT_FALSE(dir.empty());
    EXPECT_EQ(f.output, dir.string() + "\n" + dir.string() + "\ngiven\n");
    EXPECT_TRUE(fs::exists(dir / "made.txt"));
    EXPECT_EQ(fs::path(dir).parent_path(), fs::path(sb::default_scratch_base()));
  }
  EXPECT_FALSE(fs::exists(dir)) << "scratch dir left behind";
}

TEST(Runner, RlimitsAreVisibleInTheChild) {
  sb::Runner r;
  auto s = sh("cat /proc/self/limits");
  s.limits.cpu_seconds = 7;
  s.limits.memory_mb = 512;
  s.limits.file_mb = 3;
  s.limits.open_files = 40;
  s.limits.processes = 100;
  auto f = r.run(std::move(s));
  ASSERT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(limit_of(f.output, "Max cpu time"), 7);
  EXPECT_EQ(limit_of(f.output, "Max address space"), 512ll * 1024 * 1024);
  EXPECT_EQ(limit_of(f.output, "Max file size"), 3ll * 1024 * 1024);
  EXPECT_EQ(limit_of(f.output, "Max open files"), 40);
  EXPECT_EQ(limit_of(f.output, "Max core file size"), 0);
  std::int64_t nproc = limit_of(f.output, "Max processes");
  EXPECT_GE(nproc, 100);
  EXPECT_LE(nproc, sb::count_user_tasks() + 100 + 50);
}

TEST(Runner, CpuLimitGivesSigxcpu) {
  sb::Runner r;
  auto s = sh("while :; do :; done");
  s.limits.cpu_seconds = 1;
  s.limits.wall_seconds = 20;
  auto f = r.run(std::move(s));
  EXPECT_EQ(f.outcome, sb::Outcome::signaled);
  EXPECT_EQ(f.signal, SIGXCPU);
  EXPECT_GE(f.user_seconds + f.system_seconds, 0.9);
}

TEST(Runner, InputChannelAndResultPipe) {
  sb::Runner r;
  auto s = sh("read n <&3; echo \"got $n\" >&4; echo printed");
  s.input_fd = 3;
  s.input = "nonce-1234\n";
  s.result_fd = 4;
  auto f = r.run(std::move(s));
  EXPECT_EQ(f.exit_code, 0);
  EXPECT_EQ(f.result, "got nonce-1234\n");
  EXPECT_EQ(f.output, "printed\n");
}

TEST(Runner, UnreadInputDoesNotRaiseSigpipe) {
  sb::Runner r;
  auto s = sh("exit 0");
  s.input_fd = 3;
  s.input = std::string(1 << 20, 'x');   // more than any socket buffer
  auto f = r.run(std::move(s));
  EXPECT_EQ(f.outcome, sb::Outcome::exited);   // and the test process is still here
}

TEST(Runner, OnlyTheListedFdsReachTheChild) {
  int leaked = ::open("/dev/null", O_RDONLY);   // no O_CLOEXEC on purpose
  ASSERT_GE(leaked, 0);
  sb::Runner r;
  auto s = sh("ls /proc/$$/fd");
  s.result_fd = 5;
  auto f = r.run(std::move(s));
  ::close(leaked);
  std::set<std::string> fds;
  std::istringstream in(f.output);
  for (std::string x; in >> x;) fds.insert(x);
  EXPECT_EQ(fds, (std::set<std::string>{"0", "1", "2", "5"})) << f.output;
}

TEST(Runner, SignalMaskAndIgnoredSignalsAreReset) {
  // The engine may ignore SIGPIPE: the child must not inherit that.
  struct sigaction old;
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old);
  sb::Runner r;
  auto f = r.run(sh("grep -E '^Sig(Ign|Blk)' /proc/self/status"));
  sigaction(SIGPIPE, &old, nullptr);
  EXPECT_NE(f.output.find("SigBlk:\t0000000000000000"), std::string::npos) << f.output;
  EXPECT_NE(f.output.find("SigIgn:\t0000000000000000"), std::string::npos) << f.output;
}

TEST(Runner, ManyInParallelAndKill) {
  sb::Runner r;
  std::set<std::uint64_t> ids;
  for (int i = 0; i < 4; ++i) ids.insert(r.start(sh("sleep 0.2; exit " + std::to_string(i))));
  auto victim = r.start(sh("sleep 100"));
  EXPECT_EQ(r.running(), 5u);
  EXPECT_TRUE(r.kill(victim));
  std::map<std::uint64_t, sb::Finished> got;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (got.size() < 5 && std::chrono::steady_clock::now() < until)
    for (auto& f : r.poll(std::chrono::milliseconds(500))) got.emplace(f.id, std::move(f));
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got.at(victim).outcome, sb::Outcome::killed);
  std::set<int> codes;
  for (auto id : ids) {
    EXPECT_EQ(got.at(id).outcome, sb::Outcome::exited);
    codes.insert(got.at(id).exit_code);
  }
  EXPECT_EQ(codes, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(r.running(), 0u);
  expect_no_children();
}

TEST(Runner, KillAllReapsEverything) {
  {
    sb::Runner r;
    for (int i = 0; i < 3; ++i) r.start(sh("sleep 100"));
    EXPECT_EQ(r.kill_all().size(), 3u);
    EXPECT_EQ(r.running(), 0u);
    expect_no_children();
    r.start(sh("sleep 100"));
  }   // the destructor kills and reaps too
  expect_no_children();
}

TEST(Runner, PollWithNothingRunningReturnsAtOnce) {
  sb::Runner r;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(r.poll(std::chrono::milliseconds(2000)).empty());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
}

TEST(Runner, MissingExecutableThrows) {
  sb::Runner r;
  sb::Spec s = sh("");
  s.argv = {"/nonexistent/kevo-no-such-program"};
  EXPECT_THROW(r.start(s), kevo::Failure);
  s.argv = {"kevo-no-such-program-in-path"};
  EXPECT_THROW(r.start(s), kevo::Failure);
  expect_no_children();
}

// A persistent process whose answer is already there when send() returns
// (send reads the pipes on its way out): poll() must still wake at once for
// it instead of sleeping to its timeout (the command backend's persistent
// evaluators lost 50 ms on one request in three to this).
TEST(Runner, OutputReadDuringSendStillWakesPoll) {
  sb::Runner r;
  const fs::path flag = fs::temp_directory_path() / ("kevo-runner-wake-" + std::to_string(::getpid()));
  fs::remove(flag);
  sb::Spec s = sh("echo ready; : > '" + flag.string() + "'; exec cat > /dev/null");
  s.input_fd = 0;
  s.keep_input_open = true;
  s.wake_on_output = true;
  const auto id = r.start(std::move(s));
  // "ready" waits in the pipe once the flag exists (however loaded the machine).
  for (int i = 0; i < 2000 && !fs::exists(flag); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(flag));
  fs::remove(flag);
  ASSERT_TRUE(r.send(id, "x\n"));
  const auto t0 = std::chrono::steady_clock::now();
  const auto done = r.poll(std::chrono::milliseconds(5000));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(done.empty());
  EXPECT_LT(waited, 2.5) << "poll slept to its timeout with output waiting";
  EXPECT_EQ(r.take_output(id), "ready\n");
  r.kill_all();
}
