// The CUDA variant of the seccomp policy on a GPU (label gpu): with
// backend.cuda.sandbox.seccomp on, every bundled task still prepares and its
// seed is correct and timed (the driver works under the policy), candidates
// whose host code creates a file (in their code or in a static constructor),
// forks or opens a socket get runtime_error "sandbox violation", and the
// tool stages (compute-sanitizer, ncu) still run, through the worker's
// spawner. Without a usable CUDA device every test skips and says why.
#include "gpu_backend.hpp"
#include "require_gpu.hpp"

#include "kevo/cuda/cuda_backend.hpp"

#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

namespace fs = std::filesystem;
using namespace kevo;

namespace {

std::unique_ptr<Backend> make_backend(bool seccomp, double wall_seconds, const std::string& sanitizer = "",
                                      int profile_every = 0, bool namespaces = true) {
  cuda::CudaOptions o = test::gpu_test_options(wall_seconds, sanitizer, profile_every);
  o.base.seccomp = seccomp;
  o.base.namespaces = namespaces;
  return cuda::make_cuda_backend(std::move(o));
}

using test::read_text;

// The candidate's source with KEVO_ESCAPE_PATH replaced by `path`.
std::string escape_source(const std::string& file, const fs::path& path) {
  std::string src = read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / file);
  const std::string mark = "KEVO_ESCAPE_PATH";
  for (auto at = src.find(mark); at != std::string::npos; at = src.find(mark, at)) src.replace(at, mark.size(), path.string());
  return src;
}

fs::path escape_path(const std::string& tag) {
  return fs::temp_directory_path() / ("kevo-cuda-escape-" + tag + "-" + std::to_string(::getpid()));
}

void print(const std::string& what, const Verdict& v) {
  std::cout << "[ verdict  ] " << what << ": " << to_string(v.status) << ": " << v.message << "\n";
  if (v.status == Status::internal_error || v.message.find("sandbox violation") != std::string::npos)
    std::cout << "             output: " << v.output_tail << "\n";
}

}  // namespace

TEST(CudaSandboxGpu, EveryTaskPreparesAndItsSeedIsCorrectAndTimedUnderThePolicy) {
  REQUIRE_GPU();
  auto backend = make_backend(true, 120);
  for (const auto& d : find_task_dirs(KEVO_CUDA_TASKS)) {
    auto task = std::make_shared<const Task>(load_task(d));
    // A system call the driver needs and the policy forbids shows here as
    // "sandbox violation: forbidden system call N (name)".
    ASSERT_NO_THROW(backend->prepare(*task)) << task->name;
    const Verdict v = backend->evaluate(task, task->seed_source, 7);
    print("seed of " + task->name + " under the policy", v);
    EXPECT_EQ(v.status, Status::correct) << task->name << ": " << v.message;
    EXPECT_GT(v.cand_median_ns, 0.0) << task->name;
  }
}

class CudaEscapes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!kevo::test::no_gpu_reason().empty()) return;
    backend_ = make_backend(true, 30).release();
    task_ = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
    backend_->prepare(*task_);
  }
  static void TearDownTestSuite() {
    delete backend_;
    backend_ = nullptr;
  }
  static Verdict judge(const std::string& file, const std::string& source) {
    const Verdict v = backend_->evaluate(task_, source, 13);
    print(file, v);
    return v;
  }
  static void expect_violation(const Verdict& v, const std::string& call) {
    EXPECT_EQ(v.status, Status::runtime_error) << v.message;
    EXPECT_NE(v.message.find("sandbox violation"), std::string::npos) << v.message;
    EXPECT_NE(v.message.find(call), std::string::npos) << v.message;
  }
  static Backend* backend_;
  static std::shared_ptr<const Task> task_;
};
Backend* CudaEscapes::backend_ = nullptr;
std::shared_ptr<const Task> CudaEscapes::task_;

TEST_F(CudaEscapes, CreatingAFileIsAViolation) {
  REQUIRE_GPU();
  const fs::path target = escape_path("file");
  fs::remove(target);
  expect_violation(judge("escape_writes_file.cu", escape_source("escape_writes_file.cu", target)), "open");
  EXPECT_FALSE(fs::exists(target));
}

TEST_F(CudaEscapes, CreatingAFileWhileBeingLoadedIsAViolation) {
  REQUIRE_GPU();
  const fs::path target = escape_path("ctor");
  fs::remove(target);
  expect_violation(judge("escape_constructor_file.cu", escape_source("escape_constructor_file.cu", target)), "open");
  EXPECT_FALSE(fs::exists(target));
}

TEST_F(CudaEscapes, RewritingAnExistingFileIsRefused) {
  // The CUDA variant lets an existing file be opened read-write (the
  // driver's device files); Landlock keeps every other file unwritten.
  REQUIRE_GPU();
  const fs::path target = escape_path("rewrite");
  std::ofstream(target) << "original\n";
  const Verdict v = judge("escape_rewrites_file.cu", escape_source("escape_rewrites_file.cu", target));
  EXPECT_EQ(v.status, Status::correct) << v.message;
  EXPECT_EQ(read_text(target), "original\n") << "a candidate rewrote a file of the user";
  fs::remove(target);
}

TEST_F(CudaEscapes, StartingAProcessIsAViolation) {
  REQUIRE_GPU();
  expect_violation(judge("escape_forks.cu", read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "escape_forks.cu")), "clone");
}

TEST_F(CudaEscapes, OpeningASocketIsAViolation) {
  REQUIRE_GPU();
  expect_violation(judge("escape_socket.cu", read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "escape_socket.cu")), "socket");
}

TEST_F(CudaEscapes, ATimerThatResumesTheHostIsAViolation) {
  // resumes_itself.cu: a timer whose signal is SIGCONT resumes the stopped
  // host while the judge times the reference.
  REQUIRE_GPU();
  expect_violation(judge("resumes_itself.cu", read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "resumes_itself.cu")),
                   "timer_create");
}

TEST_F(CudaEscapes, AfterViolationsACorrectCandidateIsStillJudgedCorrect) {
  REQUIRE_GPU();
  const Verdict v = judge("seed", task_->seed_source);
  EXPECT_EQ(v.status, Status::correct) << v.message;
}

TEST(CudaSandboxGpu, WithoutThePolicyTheFileEscapeSucceeds) {
  // The control: the candidate really creates its file when nothing stops
  // it (no policy, and no namespaces: with them the candidate's process
  // has a read-only root of its own), so the violation above is the
  // policy's doing.
  REQUIRE_GPU();
  auto backend = make_backend(false, 30, "", 0, false);
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
  backend->prepare(*task);
  const fs::path target = escape_path("control");
  fs::remove(target);
  const Verdict v = backend->evaluate(task, escape_source("escape_writes_file.cu", target), 13);
  print("escape_writes_file.cu without the policy", v);
  EXPECT_EQ(v.status, Status::correct) << v.message;
  EXPECT_TRUE(fs::exists(target));
  fs::remove(target);
}

TEST(CudaSandboxGpu, TheSanitizerStageRunsUnderThePolicy) {
  // The worker may not fork under the policy: compute-sanitizer is started
  // by its spawner.
  REQUIRE_GPU();
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
  auto b = make_backend(true, 180, "memcheck");
  b->prepare(*task);
  const Verdict oob = b->evaluate(task, read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "oob_scratch.cu"), 3);
  print("oob_scratch.cu under memcheck and the policy", oob);
  EXPECT_EQ(oob.status, Status::runtime_error);
  EXPECT_NE(oob.message.find("compute-sanitizer memcheck found errors"), std::string::npos) << oob.message;
  const Verdict seed = b->evaluate(task, task->seed_source, 3);
  print("axpy seed under memcheck and the policy", seed);
  EXPECT_EQ(seed.status, Status::correct) << seed.message;
}

TEST(CudaSandboxGpu, TheProfileStageRunsUnderThePolicy) {
  REQUIRE_GPU();
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "softmax"));
  auto b = make_backend(true, 180, "", 1);
  b->prepare(*task);
  const Verdict v = b->evaluate(task, task->seed_source, 3);
  print("softmax seed profiled under the policy", v);
  ASSERT_EQ(v.status, Status::correct) << v.message;
  std::cout << "[ profile  ] " << v.profile << "\n";
  EXPECT_NE(v.profile.find("DRAM"), std::string::npos) << v.profile;
}

TEST(CudaSandboxGpu, WithoutThePolicyAHostThatResumesItselfIsFoundRunning) {
  // The second defence and the control of the first: with no policy the
  // timer of resumes_itself.cu is made and resumes the host after its
  // answers, and the judge, which checks after every timed pair that the
  // host is still stopped, finds it running.
  REQUIRE_GPU();
  auto backend = make_backend(false, 30);
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
  backend->prepare(*task);
  const Verdict v = backend->evaluate(task, read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "resumes_itself.cu"), 13);
  print("resumes_itself.cu without the policy", v);
  EXPECT_EQ(v.status, Status::runtime_error) << v.message;
  EXPECT_NE(v.message.find("resumed itself"), std::string::npos) << v.message;
}

namespace {

// The GPU timing slot's lock files in the default lock_dir (/tmp).
bool slot_lock_exists() {
  for (const auto& e : fs::directory_iterator("/tmp")) {
    const std::string name = e.path().filename().string();
    if (name.rfind("kevo-gpu-", 0) == 0 && e.path().extension() == ".lock") return true;
  }
  return false;
}

}  // namespace

TEST(CudaSandboxGpu, WithoutARootOfItsOwnAHostCannotHoldTheTimingSlot) {
  // holds_the_slot.cu opens the slot's .lock file in /tmp, which a host
  // without a root of its own can see, and holds it shared from a thread:
  // no worker on the GPU could time while it lives. Under the policy its
  // flock fails (ENOLCK) and the honest kernel is judged correct in time.
  REQUIRE_GPU();
  auto backend = make_backend(true, 60, "", 0, false);
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
  backend->prepare(*task);
  ASSERT_TRUE(slot_lock_exists()) << "no kevo-gpu-*.lock in /tmp: the attack would find nothing to hold";
  const Verdict v = backend->evaluate(task, read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "holds_the_slot.cu"), 13);
  print("holds_the_slot.cu under the policy, no namespaces", v);
  EXPECT_EQ(v.status, Status::correct) << v.message;
}

TEST(CudaSandboxGpu, WithoutThePolicyAHostThatHoldsTheTimingSlotStallsTheTiming) {
  // The control: with neither the policy nor a root of its own the same
  // host holds the lock, and its own timing never gets the slot.
  REQUIRE_GPU();
  auto backend = make_backend(false, 20, "", 0, false);
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
  backend->prepare(*task);
  ASSERT_TRUE(slot_lock_exists());
  const Verdict v = backend->evaluate(task, read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "holds_the_slot.cu"), 13);
  print("holds_the_slot.cu without the policy or namespaces", v);
  EXPECT_EQ(v.status, Status::timeout) << v.message;
  // Once its host is gone the slot is free again: the seed is timed.
  const Verdict seed = backend->evaluate(task, task->seed_source, 13);
  EXPECT_EQ(seed.status, Status::correct) << seed.message;
}
