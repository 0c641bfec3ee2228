// The candidate policy, installed by a probe program on itself: threads and
// reads work; processes, programs, file writes, network and signalling other
// processes are violations reported with the syscall number.
#include "kevo/sandbox/runner.hpp"
#include "kevo/sandbox/seccomp.hpp"

#include "probe.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/syscall.h>

#include <filesystem>
#include <fstream>

namespace sb = kevo::sandbox;
namespace fs = std::filesystem;

using kevo::test::expect_violation;
using kevo::test::probe;

TEST(Seccomp, ArchitectureIsSupported) { EXPECT_TRUE(sb::seccomp_supported_arch()); }

TEST(Seccomp, PolicyInstallsAndNormalWorkGoesOn) {
  auto f = probe({"nothing"});
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output, "ok\n");
}

TEST(Seccomp, ThreadsKeepWorking) {
  auto f = probe({"threads"});
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output, "threads 10\n");
}

TEST(Seccomp, OpenMpKeepsWorking) {
  auto f = probe({"openmp"});
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output, "openmp 499500\n");
}

TEST(Seccomp, Clone3FailsWithEnosys) {
  auto f = probe({"clone3"});
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output, "clone3 ENOSYS\n");
}

TEST(Seccomp, ReadingFilesIsAllowed) {
  auto f = probe({"read-file", "/proc/self/status"});
  EXPECT_EQ(f.exit_code, 0);
  EXPECT_EQ(f.output, "read-open ok\n");
}

TEST(Seccomp, ForkIsAViolation) {
  // glibc's fork() is clone without CLONE_THREAD.
  expect_violation(probe({"fork"}), "clone");
}

TEST(Seccomp, ExecIsAViolation) { expect_violation(probe({"exec"}), "execve"); }

TEST(Seccomp, WritingAFileIsAViolation) {
  fs::path target = sb::default_scratch_base() / "kevo-seccomp-test-must-not-exist";
  fs::remove(target);
  const auto f = probe({"write-file", target.string()});
  expect_violation(f, "open");
  EXPECT_FALSE(fs::exists(target));
  // The handler's second line names the file (what a user needs to tell a
  // library's cache from the candidate's own attempt).
  EXPECT_NE(f.output.find("\nsandbox violation path: " + target.string() + "\n"), std::string::npos) << f.output;
}

TEST(Seccomp, AViolationPathIsPrintableAndCut) {
  // Bytes outside printable ASCII become '?', and a long path is cut at 160
  // bytes: the line is written from a signal handler into a report a prompt
  // may quote.
  const std::string name = std::string(200, 'a') + "\x01\x7f";
  const fs::path target = sb::default_scratch_base() / ("kevo-seccomp-\x01\x7f-" + name);
  const auto f = probe({"write-file", target.string()});
  expect_violation(f, "open");
  const std::string head = "\nsandbox violation path: ";
  const auto at = f.output.find(head);
  ASSERT_NE(at, std::string::npos) << f.output;
  const std::string line = f.output.substr(at + head.size(), f.output.find('\n', at + 1) - at - head.size());
  std::string want = (sb::default_scratch_base() / "kevo-seccomp-?" "?-").string() + name;
  want = want.substr(0, 160) + "...";
  EXPECT_EQ(line, want);
  EXPECT_FALSE(fs::exists(target));
}

TEST(Seccomp, UnlinkAndMkdirAreViolations) {
  expect_violation(probe({"unlink", "/tmp/kevo-nothing-here"}), "unlink");
  expect_violation(probe({"mkdir", "/tmp/kevo-nothing-here"}), "mkdir");
}

TEST(Seccomp, NetworkIsAViolation) { expect_violation(probe({"socket"}), "socket"); }

TEST(Seccomp, SignallingAnotherProcessIsAViolation) {
  expect_violation(probe({"kill-parent"}), "kill");
}

TEST(Seccomp, SignallingItselfIsAllowed) {
  auto f = probe({"raise"});
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output, "raise 0\n");
}

TEST(Seccomp, ReplacingTheSigsysHandlerIsAViolationReportedByTheHandler) {
  // The attempt is trapped before it takes effect: the handler still in
  // place names it, and the probe never prints "replaced".
  auto f = probe({"sigsys-handler"});
  expect_violation(f, "rt_sigaction");
  EXPECT_EQ(f.output.find("replaced"), std::string::npos) << f.output;
}
