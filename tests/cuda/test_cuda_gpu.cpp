// The CUDA backend on a GPU (label gpu). Without a usable CUDA device every
// test skips and says why. With one: every bundled task prepares (reference
// self-check, null candidates rejected, seed correct and timed) and the
// adversarial candidates of tests/cuda/adversarial get the verdicts they
// must get.
#include "gpu_backend.hpp"
#include "require_gpu.hpp"

#include "kevo/cuda/cuda_backend.hpp"
#include "kevo/cpu/cpu_backend.hpp"

#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"

#include "kevo/sandbox/isolation.hpp"

#include <cuda_runtime.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using namespace kevo;

namespace {

std::unique_ptr<Backend> make_backend(double wall_seconds, const std::string& sanitizer = "", int profile_every = 0) {
  return cuda::make_cuda_backend(test::gpu_test_options(wall_seconds, sanitizer, profile_every));
}

using test::read_text;

}  // namespace

TEST(CudaGpu, EveryTaskPreparesAndItsSeedIsCorrectAndTimed) {
  REQUIRE_GPU();
  auto backend = make_backend(120);
  for (const auto& d : find_task_dirs(KEVO_CUDA_TASKS)) {
    auto task = std::make_shared<const Task>(load_task(d));
    ASSERT_NO_THROW(backend->prepare(*task)) << task->name;
    const Verdict v = backend->evaluate(task, task->seed_source, 7);
    EXPECT_EQ(v.status, Status::correct) << task->name << ": " << v.message;
    EXPECT_GT(v.speedup, 0.0) << task->name;
    EXPECT_GT(v.cand_median_ns, 0.0) << task->name;
    std::cout << "[ seed     ] " << task->name << ": " << v.message << " (worker " << v.worker_seconds << " s)\n";
  }
}

class Adversarial : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!kevo::test::no_gpu_reason().empty()) return;
    backend_ = make_backend(20).release();
    task_ = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
    backend_->prepare(*task_);
  }
  static void TearDownTestSuite() {
    delete backend_;
    backend_ = nullptr;
  }
  Verdict judge(const std::string& file) {
    const Verdict v = backend_->evaluate(task_, read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / file), 11);
    std::cout << "[ verdict  ] " << file << ": " << to_string(v.status) << ": " << v.message << "\n";
    return v;
  }
  static Backend* backend_;
  static std::shared_ptr<const Task> task_;
};
Backend* Adversarial::backend_ = nullptr;
std::shared_ptr<const Task> Adversarial::task_;

TEST_F(Adversarial, WorkOnANonBlockingStreamCounts) {
  REQUIRE_GPU();
  const Verdict v = judge("other_stream.cu");
  EXPECT_EQ(v.status, Status::correct) << v.message;
  EXPECT_GT(v.cand_median_ns, 1000.0) << "the stream's work must be inside the timing";
}

TEST_F(Adversarial, SkippedWorkIsWrong) {
  REQUIRE_GPU();
  EXPECT_EQ(judge("skipped_work.cu").status, Status::wrong_answer);
}

TEST_F(Adversarial, PartlyWrittenOutputIsWrong) {
  REQUIRE_GPU();
  const Verdict v = judge("partial_output.cu");
  EXPECT_EQ(v.status, Status::wrong_answer);
  EXPECT_NE(v.message.find("never written"), std::string::npos) << v.message;
}

TEST_F(Adversarial, ResultCachedAcrossCallsIsWrong) {
  REQUIRE_GPU();
  EXPECT_EQ(judge("cached_result.cu").status, Status::wrong_answer);
}

TEST_F(Adversarial, ACacheOfTheLastTwoResultsEarnsNothing) {
  // The attack of issue 15: two kept results beat a timing that alternates
  // two input sets (8.9x on sgemm where the kernel alone earned 1.55x).
  // Every timed call has fresh inputs now: it never hits.
  REQUIRE_GPU();
  const Verdict honest = backend_->evaluate(task_, task_->seed_source, 11);
  ASSERT_EQ(honest.status, Status::correct) << honest.message;
  const Verdict v = judge("cache_two_results.cu");
  ASSERT_EQ(v.status, Status::correct) << v.message;
  EXPECT_LT(v.speedup, 1.3 * honest.speedup) << "honest " << honest.speedup << "x";
}

TEST_F(Adversarial, WorkDoneWhileTheHostIsPrimedEarnsNothing) {
  // A thread that computes a timed call's outputs while the judge primes
  // the host, outside the window (docs/cuda.md#timing): the prime waits for
  // its own stream only, so that work is waited for inside the window. The
  // same kernel computed in the call (other_stream.cu) is the yardstick.
  REQUIRE_GPU();
  const Verdict plain = judge("other_stream.cu");
  ASSERT_EQ(plain.status, Status::correct) << plain.message;
  const Verdict v = judge("works_during_prime.cu");
  std::cout << "[ prime    ] the kernel in the call " << plain.cand_median_ns << " ns, computed while primed "
            << v.cand_median_ns << " ns\n";
  ASSERT_EQ(v.status, Status::correct) << v.message;
  EXPECT_GT(v.cand_median_ns, 0.9 * plain.cand_median_ns) << "work done while primed went untimed";
}

TEST(CudaGpu, NullCallsLengthenedAfterTheCodeIsLoadedAreNotTakenOffTheCalls) {
  // lengthens_null_calls.cu puts a spinning kernel in every null call made
  // after its code is loaded, and in none of its timed calls. With the null
  // calls made again after every shape ("always"), its second median comes
  // out longer than the first, which is kept: its kernel is timed as the
  // same kernel without the attack (other_stream.cu, judged the same way).
  REQUIRE_GPU();
  cuda::CudaOptions o = test::gpu_test_options(60);
  o.null_recalibration = "always";
  auto backend = cuda::make_cuda_backend(o);
  auto* cb = dynamic_cast<cpu::CpuBackend*>(backend.get());
  ASSERT_NE(cb, nullptr);
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
  backend->prepare(*task);
  auto count = [&](const cpu::CpuBackend::Stats& before, const char* phase) {
    const auto& now = cb->stats().worker_phase_seconds;
    const auto a = now.find(phase), b = before.worker_phase_seconds.find(phase);
    return (a == now.end() ? 0.0 : a->second) - (b == before.worker_phase_seconds.end() ? 0.0 : b->second);
  };
  const cpu::CpuBackend::Stats s0 = cb->stats();
  const Verdict plain = backend->evaluate(task, read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "other_stream.cu"), 11);
  ASSERT_EQ(plain.status, Status::correct) << plain.message;
  EXPECT_EQ(count(s0, "null_recalibrations"), static_cast<double>(task->visible.size()));
  const cpu::CpuBackend::Stats s1 = cb->stats();
  const Verdict v = backend->evaluate(task, read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "lengthens_null_calls.cu"), 11);
  std::cout << "[ verdict  ] lengthens_null_calls.cu: " << to_string(v.status) << ": " << v.message
            << " (the same kernel without the attack " << plain.cand_median_ns / 1e3
            << " us; second null median longer on " << count(s1, "null_second_longer") << " of "
            << count(s1, "null_recalibrations") << " shapes)\n";
  ASSERT_EQ(v.status, Status::correct) << v.message;
  EXPECT_EQ(count(s1, "null_second_longer"), count(s1, "null_recalibrations")) << "the attack did not lengthen them";
  EXPECT_GT(v.cand_median_ns, 0.9 * plain.cand_median_ns) << "a lengthened null call came off the calls";
}

TEST_F(Adversarial, AnAnswerBeforeTheKernelIsDoneEarnsNothing) {
  // answers_early.cu writes its answer into the control block while its
  // kernel still runs, in its timed calls only. The judge's probe after
  // each timed call waits for that kernel, and what it waits beyond the
  // same probe after a null call is counted in the call's time: the kernel
  // is timed as the same kernel answered honestly (other_stream.cu), and
  // the verdict says so (which shows that the attack did answer early).
  REQUIRE_GPU();
  const Verdict plain = judge("other_stream.cu");
  ASSERT_EQ(plain.status, Status::correct) << plain.message;
  EXPECT_EQ(plain.message.find("left running"), std::string::npos) << "an honest kernel was charged: " << plain.message;
  const Verdict v = judge("answers_early.cu");
  std::cout << "[ early    ] the same kernel " << plain.cand_median_ns << " ns, answered early " << v.cand_median_ns
            << " ns\n";
  if (v.status == Status::correct) {
    EXPECT_GT(v.cand_median_ns, 0.9 * plain.cand_median_ns) << v.message;
    EXPECT_NE(v.message.find("left running after its answers"), std::string::npos) << v.message;
  }
}

TEST_F(Adversarial, InputsKeptPersistingInTheL2EarnNothing) {
  // persists_in_l2.cu marks as much of x as the device allows persisting
  // in the L2 (an access policy window), so that the judge's flush, an
  // ordinary write, would leave it warm. The judge resets the persisting
  // lines before every flush: the kernel is timed as the same kernel
  // without the window (other_stream.cu). What it gains where the reset is
  // off (backend.cuda.reset_persisting_l2 false) is printed: the control.
  REQUIRE_GPU();
  const Verdict plain = judge("other_stream.cu");
  ASSERT_EQ(plain.status, Status::correct) << plain.message;
  const Verdict v = judge("persists_in_l2.cu");
  ASSERT_EQ(v.status, Status::correct) << v.message;
  cuda::CudaOptions o = test::gpu_test_options(20);
  o.reset_persisting_l2 = false;
  auto off = cuda::make_cuda_backend(std::move(o));
  off->prepare(*task_);
  const Verdict c = off->evaluate(task_, read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "persists_in_l2.cu"), 11);
  std::cout << "[ l2       ] the same kernel " << plain.cand_median_ns << " ns; with the window " << v.cand_median_ns
            << " ns; with the window and no reset " << c.cand_median_ns << " ns (" << to_string(c.status) << ")\n";
  EXPECT_GT(v.cand_median_ns, 0.97 * plain.cand_median_ns) << "persisting lines outlived the flush: " << v.message;
}

TEST_F(Adversarial, AWidenedToleranceHidesNoEarlyAnswer) {
  // widens_tolerance.cu answers early as answers_early.cu does, and first
  // leaves 200 us of GPU work after every other null call of the second
  // calibration, which would widen the spread of the judge's probe after
  // them, and so the tolerance, past what its early answers hide. The
  // spread comes from the first calibration (before its code was loaded).
  // The control is the same early answer without the widening
  // (answers_early.cu): a widened tolerance would hide more than it does.
  REQUIRE_GPU();
  const Verdict plain = judge("other_stream.cu");
  ASSERT_EQ(plain.status, Status::correct) << plain.message;
  const Verdict early = judge("answers_early.cu");
  const Verdict v = judge("widens_tolerance.cu");
  std::cout << "[ early    ] the same kernel " << plain.cand_median_ns << " ns, answered early " << early.cand_median_ns
            << " ns, answered early after a widened spread " << v.cand_median_ns << " ns\n";
  if (v.status != Status::correct) return;
  EXPECT_GT(v.cand_median_ns, 0.85 * plain.cand_median_ns) << v.message;
  if (early.status == Status::correct) {
    EXPECT_GT(v.cand_median_ns, 0.95 * early.cand_median_ns) << "the widening hid more: " << v.message;
  }
}

TEST_F(Adversarial, WorkInASecondContextEarnsNothing) {
  // second_context.cu launches its kernel in a second, ordinary context of
  // the host's (a green context would not do: the primary context's
  // synchronize waits for green contexts too),
  // which the host's synchronize after the call does not wait for, so the
  // host answers while the kernel runs (without touching the control
  // block). The judge's probe after each timed call waits for any context's
  // work: timed as the same kernel in the host's own context
  // (other_stream.cu), or not correct. Its stderr says where the driver
  // refused the second context (no attack took place then).
  REQUIRE_GPU();
  const Verdict plain = judge("other_stream.cu");
  ASSERT_EQ(plain.status, Status::correct) << plain.message;
  const Verdict v = judge("second_context.cu");
  const bool attacked = v.output_tail.find("launching in the host's context") == std::string::npos;
  std::cout << "[ early    ] the same kernel " << plain.cand_median_ns << " ns, in a second context "
            << v.cand_median_ns << " ns (" << (attacked ? "second context made" : "second context refused") << ")\n"
            << v.output_tail << "\n";
  if (v.status == Status::correct) {
    EXPECT_GT(v.cand_median_ns, 0.9 * plain.cand_median_ns) << v.message;
  }
}

TEST_F(Adversarial, WorkThatOutlastsATimeSliceAfterTheAnswerEarnsNothing) {
  // outlasts_the_probe.cu answers early (as answers_early.cu does) and
  // leaves 20 ms of GPU work, several time slices: one probe after the call
  // waits for one slice of it. The judge probes again while each probe is
  // held up, and counts every one: timed as the same work answered after
  // the kernel (the same file with EARLY 0), or not correct.
  REQUIRE_GPU();
  const std::string src = read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "outlasts_the_probe.cu");
  const Verdict plain = backend_->evaluate(task_, "#define EARLY 0\n" + src, 11);
  std::cout << "[ verdict  ] outlasts_the_probe.cu, EARLY 0: " << to_string(plain.status) << ": " << plain.message
            << "\n";
  ASSERT_EQ(plain.status, Status::correct) << plain.message;
  const Verdict v = judge("outlasts_the_probe.cu");
  std::cout << "[ slices   ] the same work answered after it " << plain.cand_median_ns << " ns, answered early "
            << v.cand_median_ns << " ns\n";
  // The defence charges the work; it has no reason to fail the candidate.
  ASSERT_EQ(v.status, Status::correct) << v.message;
  EXPECT_GT(v.cand_median_ns, 0.9 * plain.cand_median_ns) << v.message;
}

TEST_F(Adversarial, WorkReleasedByTheJudgesInputFillEarnsNothing) {
  // released_by_fill.cu leaves, after every call, a stream of a second
  // context waiting (cuStreamWaitValue32) for the judge's next fill to
  // poison `out`, then computing the next call's outputs from the new
  // inputs outside the timed window; its call does nothing where they are
  // there. Timed as the same kernel in the call (other_stream.cu), or not
  // correct. Its stderr says where the driver refused a step, and whether
  // a call found its outputs computed (the attack took place). The judge
  // probes the GPU after each fill until a probe is quiet and adds what
  // held them up to the call (docs/verdicts.md#threat-model, hole 10).
  REQUIRE_GPU();
  const Verdict plain = judge("other_stream.cu");
  ASSERT_EQ(plain.status, Status::correct) << plain.message;
  const Verdict v = judge("released_by_fill.cu");
  const bool refused = v.output_tail.find("computing in the call") != std::string::npos;
  const bool fired = v.output_tail.find("found its outputs computed") != std::string::npos;
  std::cout << "[ released ] the same kernel " << plain.cand_median_ns << " ns, released by the fill "
            << v.cand_median_ns << " ns (" << to_string(v.status) << "; "
            << (refused ? "a driver step refused" : "the waits were set") << "; "
            << (fired ? "a call found its outputs computed" : "no call found its outputs computed") << ")\n"
            << v.output_tail << "\n";
  EXPECT_NE(v.status, Status::timeout) << "the attack hung (its wait inside the host's synchronize?): " << v.message;
  if (v.status == Status::correct) {
    EXPECT_GT(v.cand_median_ns, 0.9 * plain.cand_median_ns) << v.message;
  }
}

TEST_F(Adversarial, WorkLeftForOtherWorkersTimingsMovesNoOtherJudgement) {
  // leaves_work_for_others.cu answers its correctness calls once the axpy
  // is done and leaves 300 ms of GPU work each time, which runs while
  // other workers time their candidates (hole 4 of
  // docs/verdicts.md#threat-model). An honest candidate (other_stream.cu)
  // judged beside it, two workers at once, must be timed as it is alone:
  // each exclusive hold first waits, with the judge's probes, until no
  // work runs on the GPU.
  REQUIRE_GPU();
  cuda::CudaOptions o = test::gpu_test_options(60);
  o.base.eval_jobs = 2;
  auto b = cuda::make_cuda_backend(o);
  b->prepare(*task_);
  const std::string honest = read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "other_stream.cu");
  const std::string culprit = read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "leaves_work_for_others.cu");
  auto judge_all = [&](const std::vector<std::pair<std::uint64_t, std::string>>& sources) {
    std::map<std::uint64_t, Verdict> out;
    for (const auto& [id, src] : sources) b->submit({id, task_, src, 11});
    while (out.size() < sources.size())
      for (EvalResult& r : b->poll(std::chrono::milliseconds(50))) out[r.id] = std::move(r.verdict);
    return out;
  };
  const Verdict alone = judge_all({{1, honest}}).at(1);
  ASSERT_EQ(alone.status, Status::correct) << alone.message;
  const auto both = judge_all({{2, culprit}, {3, honest}});
  const Verdict& culprits = both.at(2);
  const Verdict& beside = both.at(3);
  std::cout << "[ verdict  ] leaves_work_for_others.cu: " << to_string(culprits.status) << ": " << culprits.message
            << "\n[ beside   ] other_stream.cu alone: candidate " << alone.cand_median_ns << " ns, reference "
            << alone.ref_median_ns << " ns, " << alone.speedup << "x; beside it: candidate " << beside.cand_median_ns
            << " ns, reference " << beside.ref_median_ns << " ns, " << beside.speedup << "x (" << beside.message
            << ")\n";
  ASSERT_EQ(beside.status, Status::correct) << beside.message;
  EXPECT_LT(beside.cand_median_ns, 1.15 * alone.cand_median_ns) << beside.message;
  EXPECT_LT(beside.ref_median_ns, 1.15 * alone.ref_median_ns) << beside.message;
  EXPECT_NEAR(beside.speedup / alone.speedup, 1.0, 0.1) << beside.message;
}

TEST_F(Adversarial, ACublasCallIsForbidden) {
  REQUIRE_GPU();
  auto sgemm = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "sgemm"));
  backend_->prepare(*sgemm);
  const Verdict v = backend_->evaluate(sgemm, read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "cublas_call.cu"), 11);
  std::cout << "[ verdict  ] cublas_call.cu: " << to_string(v.status) << ": " << v.message << "\n";
  EXPECT_EQ(v.status, Status::forbidden) << v.message;
  EXPECT_NE(v.message.find("cublas"), std::string::npos) << v.message;
}

TEST_F(Adversarial, InfiniteLoopTimesOut) {
  REQUIRE_GPU();
  EXPECT_EQ(judge("infinite_loop.cu").status, Status::timeout);
  // The GPU is usable afterwards.
  EXPECT_EQ(judge("other_stream.cu").status, Status::correct);
}

TEST_F(Adversarial, IllegalAddressIsARuntimeError) {
  REQUIRE_GPU();
  const Verdict v = judge("illegal_address.cu");
  EXPECT_EQ(v.status, Status::runtime_error);
  EXPECT_NE(v.message.find("CUDA error"), std::string::npos) << v.message;
}

TEST_F(Adversarial, TooMuchSharedMemoryIsARuntimeError) {
  REQUIRE_GPU();
  const Verdict v = judge("too_much_shared.cu");
  EXPECT_EQ(v.status, Status::runtime_error);
  EXPECT_NE(v.message.find("CUDA error"), std::string::npos) << v.message;
}

TEST_F(Adversarial, AKernelThatNeverLaunchesIsWrong) {
  REQUIRE_GPU();
  EXPECT_EQ(judge("never_launches.cu").status, Status::wrong_answer);
}

TEST_F(Adversarial, AKernelThatStopsWorkingWhileTimedIsWrong) {
  // Correct through every correctness trial, then an empty launch: the
  // first timed call whose output is checked (every one) catches it.
  REQUIRE_GPU();
  const Verdict v = judge("stops_working.cu");
  EXPECT_EQ(v.status, Status::wrong_answer);
  EXPECT_NE(v.message.find("timed call"), std::string::npos) << v.message;
}

TEST(CudaGpu, TimesUnderTheRooflineFloorAreErrors) {
  // The floor from the task's counts and the configured peaks: with a
  // bandwidth peak of 1 GB/s the honest seed's 0.16 ms is far under axpy's
  // floor (201 MB / 1 GB/s), which must be an error, not a speedup.
  REQUIRE_GPU();
  cuda::CudaOptions o = test::gpu_test_options(60);
  o.peak_gbps = 1.0;
  auto backend = cuda::make_cuda_backend(o);
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
  backend->prepare(*task);
  const Verdict v = backend->evaluate(task, task->seed_source, 3);
  EXPECT_EQ(v.status, Status::runtime_error) << v.message;
  EXPECT_NE(v.message.find("roofline"), std::string::npos) << v.message;
}

// Times as a channel: time_channel.cu spins 300 us per distinct size it
// has seen other than the visible one, and computes honestly. With the GPU
// timing after the whole protocol (hidden shapes included), its timed
// median (which a correct verdict's feedback reports) grew with the number
// of hidden shapes. The timing now runs before any hidden shape reaches
// the candidate's process: the medians do not depend on them.
TEST(CudaGpu, TimesSayNothingOfTheHiddenShapes) {
  REQUIRE_GPU();
  auto backend = make_backend(60);
  const fs::path base = fs::temp_directory_path() / ("kevo-cuda-times-" + std::to_string(::getpid()));
  const std::vector<std::pair<std::string, nlohmann::json>> variants = {
      {"one", nlohmann::json::array({{{"N", 4099}}})},
      {"four", nlohmann::json::array({{{"N", 4099}}, {{"N", 1}}, {{"N", 1000003}}, {{"N", 77}}})},
  };
  std::vector<double> medians;
  for (const auto& [name, hidden] : variants) {
    const fs::path dir = base / name;
    fs::create_directories(dir);
    fs::copy(fs::path(KEVO_CUDA_TASKS) / "axpy", dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    nlohmann::json m = nlohmann::json::parse(read_text(dir / "task.json"));
    m["shapes"]["hidden"] = hidden;
    std::ofstream(dir / "task.json") << m.dump(2);
    auto task = std::make_shared<const Task>(load_task(dir));
    backend->prepare(*task);
    const Verdict v = backend->evaluate(task, read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "time_channel.cu"), 5);
    std::cout << "[ verdict  ] time_channel.cu, " << name << " hidden: " << to_string(v.status) << ": " << v.message
              << "\n";
    ASSERT_EQ(v.status, Status::correct) << name << ": " << v.message;
    medians.push_back(v.cand_median_ns);
  }
  fs::remove_all(base);
  const double ratio = medians[1] / medians[0];
  std::printf("[ times    ] median with 1 hidden shape %.0f us, with 4: %.0f us, ratio %.2f\n", medians[0] / 1e3,
              medians[1] / 1e3, ratio);
  EXPECT_LT(ratio, 1.3) << "the timed medians tell how many hidden shapes the task has";
  EXPECT_GT(ratio, 1 / 1.3);
}

TEST_F(Adversarial, IllegalAddressTriggersAHealthCheckAndTheGpuStaysInUse) {
  REQUIRE_GPU();
  auto* cb = dynamic_cast<cpu::CpuBackend*>(backend_);
  ASSERT_NE(cb, nullptr);
  const auto before = cb->stats().health_checks;
  EXPECT_EQ(judge("illegal_address.cu").status, Status::runtime_error);
  EXPECT_EQ(cb->stats().health_checks, before + 1);
  const Verdict v = judge("other_stream.cu");
  EXPECT_EQ(v.status, Status::correct) << "the health check passed, the GPU is still judged on: " << v.message;
}

TEST_F(Adversarial, EveryVerdictNamesItsGpuAndItsTimingSlotTime) {
  REQUIRE_GPU();
  const Verdict v = backend_->evaluate(task_, task_->seed_source, 5);
  ASSERT_EQ(v.status, Status::correct) << v.message;
  EXPECT_NE(v.device.find("GPU-"), std::string::npos) << v.device;
  EXPECT_GT(v.slot_seconds, 0.0);
  EXPECT_LT(v.slot_seconds, v.worker_seconds);
  std::cout << "[ device   ] " << v.device << ", slot " << v.slot_seconds << " s of worker " << v.worker_seconds
            << " s\n";
}

TEST(CudaGpu, PhaseHoldsTakeTheSharedSlotOncePerPhaseAndAskTheDriverForNoMemoryInside) {
  REQUIRE_GPU();
  // slot_hold "phase" (the default): one shared hold for the host's
  // calibration (its null calls), one for the protocol's visible and drawn
  // shapes, per visible shape one for the timing's preparation (every
  // timed output is checked inside the exclusive hold), and one for the
  // hidden shapes after the timing; the pool reserved
  // before the first hold covers every allocation. "call": a hold per
  // protocol step.
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "sgemm"));
  std::map<std::string, std::size_t> holds;
  for (const std::string mode : {"phase", "call"}) {
    cuda::CudaOptions o = test::gpu_test_options(60);
    o.slot_hold = mode;
    auto backend = cuda::make_cuda_backend(o);
    auto* cb = dynamic_cast<cpu::CpuBackend*>(backend.get());
    ASSERT_NE(cb, nullptr);
    ASSERT_NO_THROW(backend->prepare(*task));
    const cpu::CpuBackend::Stats before = cb->stats();
    const Verdict v = backend->evaluate(task, task->seed_source, 3);
    ASSERT_EQ(v.status, Status::correct) << mode << ": " << v.message;
    holds[mode] = cb->stats().slot_shared_intervals.size() - before.slot_shared_intervals.size();
    // Exclusive: the timing per visible shape, then the reference alone in
    // its own hold once the candidate's process is gone (after the hidden
    // shapes).
    EXPECT_EQ(cb->stats().slot_intervals.size() - before.slot_intervals.size(), task->visible.size() + 1) << mode;
    if (mode == "phase") {
      EXPECT_EQ(cb->stats().workers_pool_grew, 0u) << cb->stats().pool_growth_mib << " MiB";
    }
    std::cout << "[ holds    ] " << mode << ": " << holds[mode] << " shared holds, pool grew "
              << cb->stats().pool_growth_mib << " MiB\n";
  }
  EXPECT_EQ(holds["phase"], 3 + task->visible.size());
  EXPECT_GT(holds["call"], 10 * holds["phase"]);
}

TEST(CudaTools, SanitizerCatchesAWriteThatTheOutputsHide) {
  REQUIRE_GPU();
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
  const std::string src = read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "oob_scratch.cu");
  auto plain = make_backend(60);
  plain->prepare(*task);
  const Verdict without = plain->evaluate(task, src, 3);
  EXPECT_EQ(without.status, Status::correct) << without.message;
  auto checked = make_backend(180, "memcheck");
  checked->prepare(*task);
  const Verdict with = checked->evaluate(task, src, 3);
  std::cout << "[ verdict  ] oob_scratch.cu under memcheck: " << to_string(with.status) << ": " << with.message << "\n";
  if (with.status != Status::runtime_error) std::cout << "output: " << with.output_tail << "\n";
  EXPECT_EQ(with.status, Status::runtime_error);
  EXPECT_NE(with.message.find("compute-sanitizer memcheck found errors"), std::string::npos) << with.message;
  EXPECT_NE(with.message.find("Invalid __global__ write"), std::string::npos) << with.message;
  // The seed is clean under the sanitizer.
  const Verdict seed = checked->evaluate(task, task->seed_source, 3);
  EXPECT_EQ(seed.status, Status::correct) << seed.message;
}

TEST(CudaTools, ASanitizerReportFromAHiddenShapeIsNotInTheFeedback) {
  REQUIRE_GPU();
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "axpy"));
  const std::string src = read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "sanitizer_echo_hidden.cu");
  auto checked = make_backend(180, "memcheck");
  checked->prepare(*task);
  const Verdict v = checked->evaluate(task, src, 3);
  std::cout << "[ verdict  ] sanitizer_echo_hidden.cu under memcheck: " << to_string(v.status) << ": " << v.message
            << "\n[ feedback ] " << v.feedback << "\n";
  EXPECT_EQ(v.status, Status::runtime_error);
  EXPECT_NE(v.message.find("compute-sanitizer memcheck found errors"), std::string::npos) << v.message;
  // The report (the block index that spells N) stays in the lineage's
  // message; the feedback is the redacted text of a hidden shape's failure.
  EXPECT_NE(v.feedback.find("hidden test shape"), std::string::npos) << v.feedback;
  EXPECT_EQ(v.feedback.find("in block"), std::string::npos) << v.feedback;
  for (const auto& h : task->hidden) {
    for (const auto& [dim, value] : h.dims) {
      if (value > 9) {
        EXPECT_EQ(v.feedback.find(std::to_string(value - 1)), std::string::npos) << dim << " " << v.feedback;
      }
    }
  }
}

TEST(CudaTools, ProfileOfACorrectCandidateIsCondensedIntoTheVerdict) {
  REQUIRE_GPU();
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "softmax"));
  auto b = make_backend(180, "", 1);
  auto* cb = dynamic_cast<cpu::CpuBackend*>(b.get());
  ASSERT_NE(cb, nullptr);
  b->prepare(*task);
  const cpu::CpuBackend::Stats before = cb->stats();
  const Verdict v = b->evaluate(task, task->seed_source, 3);
  ASSERT_EQ(v.status, Status::correct) << v.message;
  std::cout << "[ profile  ] " << v.profile << "\n";
  if (v.profile.find("ncu failed") != std::string::npos) std::cout << "[ output   ] " << v.output_tail << "\n";
  // The profiler's child holds the GPU's slot only around its call, not
  // while ncu, its process and its context start; its hold is counted as
  // the candidate's: the last one, inside the worker's profile phase (from
  // its "timing" mark to its "profile" mark) and well shorter than it.
  const cpu::CpuBackend::Stats after = cb->stats();
  ASSERT_GT(after.slot_intervals.size(), before.slot_intervals.size() + 1);
  ASSERT_FALSE(after.worker_timelines.empty());
  double from = 0.0, to = 0.0;
  for (const auto& mark : after.worker_timelines.back().at("marks")) {
    if (mark.at(0) == "timing") from = mark.at(1).get<double>();
    if (mark.at(0) == "profile") to = mark.at(1).get<double>();
  }
  const auto& hold = after.slot_intervals.back();
  std::cout << "[ profile  ] slot held " << hold.second - hold.first << " s of the profile's " << to - from << " s\n";
  EXPECT_GE(hold.first, from);
  EXPECT_LE(hold.second, to);
  EXPECT_GT(hold.second, hold.first);
  EXPECT_LT(hold.second - hold.first, 0.5 * (to - from));
  EXPECT_NE(v.profile.find("DRAM"), std::string::npos) << v.profile;
  EXPECT_NE(v.profile.find("registers/thread"), std::string::npos) << v.profile;
  EXPECT_NE(v.profile.find("occupancy"), std::string::npos) << v.profile;
  EXPECT_NE(v.feedback.find("Profile:"), std::string::npos) << v.feedback;
}

// The ncu child runs the candidate without the system-call policy; for a
// task with hidden shapes it is confined (Landlock) and loads the task's
// public copy. A candidate that reads the task's manifest there (its path
// baked in) and spells the first hidden C in a dummy kernel's grid, which
// the profile quotes, finds the file closed to it (grid 2417); unconfined
// (profile.unconfined, the control) the same candidate spells 71003.
TEST(CudaTools, TheProfileChildReadsNoHiddenShape) {
  REQUIRE_GPU();
  const fs::path tasks = fs::canonical(KEVO_CUDA_TASKS);
  for (const char* d : {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt", "/proc", "/sys", "/run"})
    if (tasks.string().rfind(std::string(d) + "/", 0) == 0)
      GTEST_SKIP() << "the tasks lie under " << d << ", which the profile child may read";
  auto task = std::make_shared<const Task>(load_task(tasks / "softmax"));
  ASSERT_FALSE(task->hidden.empty());
  ASSERT_EQ(task->hidden.front().dims.at("C"), 1003);
  std::string src = read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "profile_reads_task.cu");
  const std::string mark = "@TASK_JSON@";
  for (auto at = src.find(mark); at != std::string::npos; at = src.find(mark))
    src.replace(at, mark.size(), (tasks / "softmax" / "task.json").string());
  for (const bool unconfined : {false, true}) {
    cuda::CudaOptions o = test::gpu_test_options(180, "", 1);
    o.profile_unconfined = unconfined;
    auto b = cuda::make_cuda_backend(o);
    b->prepare(*task);
    const Verdict v = b->evaluate(task, src, 3);
    ASSERT_EQ(v.status, Status::correct) << v.message;
    std::cout << "[ profile  ] " << (unconfined ? "unconfined" : "confined") << ": " << v.profile << "\n";
    if (v.profile.find("ncu failed") != std::string::npos) std::cout << "[ output   ] " << v.output_tail << "\n";
    if (v.profile.find("DRAM") == std::string::npos) {
      ADD_FAILURE() << "no profile: " << v.profile;
      continue;   // the other variant still runs: which of the two fails tells why
    }
    if (unconfined) {
      EXPECT_NE(v.profile.find("71003"), std::string::npos) << "the control did not read the manifest: " << v.profile;
    } else {
      EXPECT_EQ(v.profile.find("71003"), std::string::npos) << "the confined child read a hidden shape: " << v.profile;
      EXPECT_EQ(v.profile.find("3413"), std::string::npos) << "the confined child read the manifest: " << v.profile;
      EXPECT_NE(v.profile.find("2417"), std::string::npos) << v.profile;
    }
  }
}

// The ncu child runs the candidate without the system-call policy. A
// candidate that, under ncu, sends SIGURG to every process of kevo's above
// it (the worker that judges it and its spawner; SIGSTOP would stop them)
// spells in a dummy kernel's grid how many it tried and how many the
// kernel let through (6000 + 100 x tried + sent). Where the kernel has
// Landlock's scopes (ABI 6) the confined child's signals all fail, and the
// engine (this process, hidden by the workers' PID namespace where there is
// one) counts none; unconfined (the control) they go through.
std::atomic<int> engine_sigurg{0};

TEST(CudaTools, TheProfileChildSignalsNothingOutside) {
  REQUIRE_GPU();
  if (kevo::sandbox::landlock_abi() < 6)
    GTEST_SKIP() << "Landlock ABI " << kevo::sandbox::landlock_abi() << ": no scopes on this kernel (Linux 6.12+)";
  struct sigaction sa {}, old{};
  sa.sa_handler = [](int) { engine_sigurg.fetch_add(1); };
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(::sigaction(SIGURG, &sa, &old), 0);
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "softmax"));
  const std::string src = read_text(fs::path(KEVO_CUDA_ADVERSARIAL) / "profile_signals_engine.cu");
  for (const bool unconfined : {false, true}) {
    cuda::CudaOptions o = test::gpu_test_options(180, "", 1);
    o.profile_unconfined = unconfined;
    auto b = cuda::make_cuda_backend(o);
    b->prepare(*task);
    const int before = engine_sigurg.load();
    const Verdict v = b->evaluate(task, src, 3);
    const int got = engine_sigurg.load() - before;
    ASSERT_EQ(v.status, Status::correct) << v.message;
    std::cout << "[ profile  ] " << (unconfined ? "unconfined" : "confined") << ": the engine got " << got
              << " SIGURG; " << v.profile << "\n";
    const std::string mark = "spell() grid (";
    const auto at = v.profile.find(mark);
    if (at == std::string::npos) {
      ADD_FAILURE() << "no profile of the spelling kernel: " << v.profile;
      continue;
    }
    const int spelled = std::atoi(v.profile.c_str() + at + mark.size()) - 6000;
    const int tried = spelled / 100, sent = spelled % 100;
    std::cout << "[ profile  ] " << (unconfined ? "unconfined" : "confined") << ": tried " << tried << ", sent "
              << sent << "\n";
    EXPECT_GT(tried, 0) << "the candidate did not find itself under ncu: " << v.profile;
    if (unconfined) {
      EXPECT_GT(sent, 0) << "the control's signals were refused: " << v.profile;
    } else {
      EXPECT_EQ(sent, 0) << "the confined child signalled outside its domain: " << v.profile;
      EXPECT_EQ(got, 0) << "the confined child signalled the engine";
    }
  }
  ::sigaction(SIGURG, &old, nullptr);
}

// Library baselines that ship with the tasks as sources (cuBLAS SGEMM,
// cub::DeviceReduce) are
// compiled with their libraries and judged like candidates: correct, timed.
TEST(CudaGpu, SourceBaselinesAreCorrectAndTimed) {
  REQUIRE_GPU();
  auto backend = make_backend(180);
  int judged = 0;
  for (const char* name : {"sgemm", "reduce_sum"}) {
    auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / name));
    ASSERT_FALSE(task->source_baselines.empty()) << name;
    ASSERT_NO_THROW(backend->prepare(*task)) << name;
    const std::vector<BaselineVerdict> vs = backend->judge_baselines(*task, 7);
    ASSERT_EQ(vs.size(), task->source_baselines.size()) << name;
    for (const auto& b : vs) {
      std::cout << "[ baseline ] " << name << " " << b.name << ": " << to_string(b.verdict.status) << ", "
                << b.verdict.cand_median_ns / 1e6 << " ms vs reference " << b.verdict.ref_median_ns / 1e6
                << " ms (speedup " << b.verdict.speedup << "x) " << b.verdict.message << "\n";
      EXPECT_EQ(b.verdict.status, Status::correct) << name << " " << b.name << ": " << b.verdict.message << "\n"
                                                   << b.verdict.compile_log << b.verdict.output_tail;
      EXPECT_GT(b.verdict.cand_median_ns, 0.0) << name << " " << b.name;
      EXPECT_TRUE(b.verdict.profile.empty()) << "baselines are never profiled";
      ++judged;
    }
  }
  EXPECT_EQ(judged, 2);
}

// A profile an operator asks for is taken although profile.every (0 here)
// would not pick the candidate; the verdict's profile says why it was taken.
TEST(CudaTools, ProfileOnRequestIsTakenAndSaysWhy) {
  REQUIRE_GPU();
  auto task = std::make_shared<const Task>(load_task(fs::path(KEVO_CUDA_TASKS) / "softmax"));
  auto b = make_backend(180);   // profile.every 0, on_request (the default) with the toolkit's ncu
  b->prepare(*task);
  b->submit(EvalRequest{1, task, task->seed_source, 3, "test: asked for one"});
  b->submit(EvalRequest{2, task, task->seed_source + "\n// not asked\n", 4, ""});
  std::map<std::uint64_t, Verdict> got;
  while (got.size() < 2)
    for (auto& r : b->poll(std::chrono::milliseconds(200))) got[r.id] = std::move(r.verdict);
  ASSERT_EQ(got[1].status, Status::correct) << got[1].message;
  ASSERT_EQ(got[2].status, Status::correct) << got[2].message;
  std::cout << "[ profile  ] " << got[1].profile << "\n";
  EXPECT_EQ(got[1].profile.rfind("[profiled: requested by test: asked for one]", 0), 0u) << got[1].profile;
  EXPECT_NE(got[1].profile.find("DRAM"), std::string::npos) << got[1].profile;
  EXPECT_TRUE(got[2].profile.empty()) << got[2].profile;
}

// ---- the judge out of the candidate's process (issue 15) -------------------

TEST_F(Adversarial, ReadingTheReferencesAnswerFindsNothing) {
  // The issue's attack: in one process and context with the judge, a
  // candidate found the reference's fresh answer among the device
  // allocations and copied it. Its own process holds only its arena now.
  REQUIRE_GPU();
  const Verdict v = judge("reads_reference_answer.cu");
  EXPECT_EQ(v.status, Status::wrong_answer) << v.message;
}

TEST_F(Adversarial, AForgedResultIsOnlyOutput) {
  REQUIRE_GPU();
  // It writes into the CUDA driver's own descriptors too, so its process
  // may fail before the judge compares anything: never correct.
  const Verdict v = judge("forges_result.cu");
  EXPECT_NE(v.status, Status::correct) << v.message;
  EXPECT_LT(v.speedup, 2.0);
  EXPECT_EQ(v.message.find("forged"), std::string::npos) << v.message;
}

TEST_F(Adversarial, SignallingTheEngineIsAViolationAndTheJudgingGoesOn) {
  REQUIRE_GPU();
  const Verdict v = judge("signals_engine.cu");
  EXPECT_EQ(v.status, Status::runtime_error) << v.message;
  EXPECT_NE(v.message.find("sandbox violation"), std::string::npos) << v.message;
  const Verdict seed = backend_->evaluate(task_, task_->seed_source, 11);
  EXPECT_EQ(seed.status, Status::correct) << "the engine goes on judging: " << seed.message;
}

TEST_F(Adversarial, ASecretInTheEnginesEnvironmentReachesNoVerdict) {
  REQUIRE_GPU();
  const std::string key = "sk-kevo-test-" + std::to_string(::getpid()) + "-fake-key";
  ::setenv("KEVO_TEST_API_KEY", key.c_str(), 1);
  const Verdict v = judge("reads_secrets.cu");
  ::unsetenv("KEVO_TEST_API_KEY");
  EXPECT_EQ(v.status, Status::correct) << v.message;
  for (const std::string* text : {&v.message, &v.feedback, &v.output_tail, &v.profile})
    EXPECT_EQ(text->find(key), std::string::npos) << *text;
  EXPECT_NE(v.output_tail.find("own "), std::string::npos) << "the candidate printed its environment: " << v.output_tail;
}

TEST_F(Adversarial, KernelsLeftRunningEarnNoSpeedup) {
  REQUIRE_GPU();
  const Verdict honest = backend_->evaluate(task_, task_->seed_source, 11);
  ASSERT_EQ(honest.status, Status::correct) << honest.message;
  const Verdict v = judge("leaves_kernel_running.cu");
  if (v.status == Status::correct) {
    EXPECT_LT(v.speedup, 1.3 * honest.speedup) << "honest " << honest.speedup << "x";
  }
}

TEST_F(Adversarial, TheReferenceJudgedAsACandidateIsTimedAtParity) {
  // The candidate is timed on the judge's clock around a call into another
  // process, less that round trip as measured before its code was loaded;
  // the reference in the judge, less its own. The same code on both sides
  // must come out even.
  REQUIRE_GPU();
  const Verdict v = backend_->evaluate(task_, task_->reference_source, 17);
  ASSERT_EQ(v.status, Status::correct) << v.message;
  std::cout << "[ verdict  ] the reference as a candidate: " << v.message << "\n";
  EXPECT_GT(v.speedup, 0.85) << v.message;
  EXPECT_LT(v.speedup, 1.15) << v.message;
}

TEST_F(Adversarial, TheCandidateRunsInAProcessOfItsOwn) {
  REQUIRE_GPU();
  const Verdict v = backend_->evaluate(task_, task_->seed_source, 19);
  ASSERT_EQ(v.status, Status::correct) << v.message;
  const nlohmann::json g = backend_->guarantees();
  ASSERT_TRUE(g.is_object()) << g.dump();
  const nlohmann::json& iso = g["isolation"];
  std::cout << "[ device   ] isolation: " << iso.dump() << "\n";
  EXPECT_TRUE(iso.value("seccomp", false)) << iso.dump();
  EXPECT_EQ(iso.dump().find("no kernel hosts yet"), std::string::npos) << iso.dump();
}
