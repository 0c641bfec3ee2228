// The CUDA variant of the candidate policy, installed by the probe on
// itself ("--cuda"): an existing file may be opened read-write (the driver
// opens /dev/nvidia* so), but not created or truncated; processes, programs,
// network, ptrace, signalling others and timers that could resume a stopped
// host stay violations (fcntl may not choose a signal); threads work,
// including one that existed before the policy (it is filtered too).
#include "kevo/sandbox/runner.hpp"
#include "kevo/sandbox/scratch_dir.hpp"
#include "kevo/sandbox/seccomp.hpp"

#include "probe.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sb = kevo::sandbox;
namespace fs = std::filesystem;

namespace {

using kevo::test::expect_violation;

// The probe with the CUDA variant ("--cuda") or, for contrast, the CPU one.
sb::Finished probe(std::vector<std::string> args, bool cuda = true) {
  if (cuda) args.insert(args.begin(), "--cuda");
  return kevo::test::probe(args);
}


std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class CudaPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = sb::ScratchDir::create(sb::default_scratch_base(), "kevo-cuda-policy");
    existing_ = dir_.path() / "existing.txt";
    std::ofstream(existing_) << "keep me";
  }
  sb::ScratchDir dir_;
  fs::path existing_;
};

}  // namespace

TEST(SeccompPolicy, NamesRoundTrip) {
  EXPECT_EQ(sb::policy_from_string("cpu"), sb::Policy::cpu);
  EXPECT_EQ(sb::policy_from_string("cuda"), sb::Policy::cuda);
  EXPECT_STREQ(sb::to_string(sb::Policy::cuda), "cuda");
  EXPECT_THROW(sb::policy_from_string("gpu"), std::invalid_argument);
}

TEST_F(CudaPolicy, OpensAnExistingFileReadWrite) {
  auto f = probe({"rdwr-existing", existing_.string()});
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output, "rdwr-open ok\n");
  // The CPU policy forbids the same open.
  expect_violation(probe({"rdwr-existing", existing_.string()}, false), "open");
}

TEST_F(CudaPolicy, ListsADirectory) {
  // glibc's O_TMPFILE carries the O_DIRECTORY bit: a policy that denied
  // every bit of it trapped opendir, and a torch candidate on the GPU died
  // where torch listed one of its package directories.
  auto f = probe({"list-dir", dir_.path().string()});
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output, "list-dir ok\n");
  f = probe({"list-dir", dir_.path().string()}, false);
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output, "list-dir ok\n");
}

TEST_F(CudaPolicy, CannotMakeAnUnnamedFile) {
  expect_violation(probe({"tmpfile", dir_.path().string()}), "open");
  expect_violation(probe({"tmpfile", dir_.path().string()}, false), "open");
}

TEST_F(CudaPolicy, CannotCreateAFile) {
  const fs::path target = dir_.path() / "must-not-exist";
  expect_violation(probe({"create-rdwr", target.string()}), "open");
  expect_violation(probe({"write-file", target.string()}), "open");
  EXPECT_FALSE(fs::exists(target));
}

TEST_F(CudaPolicy, CannotTruncateAFileOnOpen) {
  expect_violation(probe({"truncate-rdwr", existing_.string()}), "open");
  EXPECT_EQ(slurp(existing_), "keep me");
}

TEST_F(CudaPolicy, CannotRemoveOrMakeDirectories) {
  expect_violation(probe({"unlink", existing_.string()}), "unlink");
  EXPECT_TRUE(fs::exists(existing_));
  expect_violation(probe({"mkdir", (dir_.path() / "d").string()}), "mkdir");
}

TEST(CudaPolicyProcesses, ForkExecSocketPtraceAndKillAreViolations) {
  expect_violation(probe({"fork"}), "clone");
  expect_violation(probe({"exec"}), "execve");
  expect_violation(probe({"socket"}), "socket");
  expect_violation(probe({"ptrace"}), "ptrace");
  expect_violation(probe({"kill-parent"}), "kill");
}

TEST(CudaPolicyProcesses, ThreadsAndOpenMpWork) {
  auto t = probe({"threads"});
  EXPECT_EQ(t.exit_code, 0) << t.output;
  EXPECT_EQ(t.output, "threads 10\n");
  auto o = probe({"openmp"});
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_EQ(o.output, "openmp 499500\n");
}

TEST(CudaPolicyProcesses, AThreadStartedBeforeThePolicyIsFilteredToo) {
  // The CUDA driver's threads exist before the worker installs the policy.
  expect_violation(probe({"early-thread-fork"}), "clone");
  expect_violation(probe({"early-thread-fork"}, false), "clone");
}

TEST(CudaPolicyProcesses, ATimerThatCouldResumeTheHostIsAViolation) {
  // A CUDA host is stopped between calls as a CPU one is: a timer whose
  // signal is SIGCONT would resume it while the judge times the reference
  // (tests/cuda/adversarial/resumes_itself.cu).
  expect_violation(probe({"timer-sigcont"}), "timer_create");
  expect_violation(probe({"timer-sigcont"}, false), "timer_create");
}

TEST_F(CudaPolicy, AFileLockIsRefusedAndUnderTheCpuVariantAViolation) {
  // The GPU's timing slot is a flock on files in lock_dir; a host that
  // could open them and hold one would stall every timing on the GPU
  // (tests/cuda/adversarial/holds_the_slot.cu). The file stays unlocked.
  const auto f = probe({"flock", existing_.string()});
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output, "flock ENOLCK\n");
  const int fd = ::open(existing_.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0) << "the file was left locked";
  ::close(fd);
  expect_violation(probe({"flock", existing_.string()}, false), "flock");
  // The torch host's variant leaves flock alone (its libraries lock their
  // caches).
  const auto torch = probe({"--locks", "flock", existing_.string()});
  EXPECT_EQ(torch.output, "flock taken\n");
}

TEST_F(CudaPolicy, AProcessThatHoldsTheTimingSlotKeepsItsOwnLocks) {
  // The worker's sanitizer child holds the GPU's slot and runs the
  // candidate under the policy: flock works on the slot's descriptors
  // (named to the policy) and on no other.
  const auto f = probe({"flock-own", existing_.string()});
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_EQ(f.output, "own taken unlock 0 other ENOLCK\n");
}

TEST(CudaPolicyProcesses, FcntlCannotChooseASignalButKeepsItsOtherCommands) {
  for (const bool cuda : {true, false}) {
    const auto f = probe({"fcntl-signal"}, cuda);
    EXPECT_EQ(f.exit_code, 0) << f.output;
    EXPECT_EQ(f.output, "F_SETSIG EINVAL F_SETOWN EINVAL F_GETFL ok F_SETFL 0 F_SETFD 0 F_DUPFD_CLOEXEC ok\n")
        << (cuda ? "cuda" : "cpu");
  }
}
