// A kernel host (backends/native/judge/host.hpp) driven alone through
// RemoteEndpoint: its calibration's null calls are made before any code of
// its library runs (a flavour's hook after each), the judge's own kill after the last call is not taken
// for the candidate's end, and the library policy's one implied library.
#include "endpoint.hpp"

#include "kevo/native/libraries.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace {

using namespace kevo::native::judge;

HostSpec spec(const std::string& library, int calibrate) {
  HostSpec s;
  s.program = KEVO_CPU_WORKER;
  s.library = library;
  s.role = "candidate";
  s.arena_bytes = 4096;
  s.calibrate = calibrate;
  return s;
}

}  // namespace

TEST(KernelHost, CalibrationCallsAreMadeBeforeTheLibraryIsLoaded) {
  // The library aborts in its static constructor: every null call was
  // answered all the same, so none of them ran after its code.
  RemoteEndpoint host(spec(KEVO_ABORTING_KERNEL, 8));
  host.wait_ready();
  EXPECT_EQ(host.null_ns().size(), 8u);
  for (double ns : host.null_ns()) EXPECT_GT(ns, 0.0);
  EXPECT_FALSE(host.ready());
  EXPECT_TRUE(host.end().ended);
  EXPECT_EQ(host.end().signal, SIGABRT) << host.load_error();
}

TEST(KernelHost, AfterEachCalibrationNullCallTheFlavoursHookRunsWithTheHostStopped) {
  // The CUDA judge probes the GPU there (docs/cuda.md#verdicts): once per
  // null call, each answered, with the host stopped again (no code of its
  // can run beside the probe).
  HostSpec s = spec(KEVO_HOST_KERNEL, 6);
  RemoteEndpoint* self = nullptr;
  int runs = 0, stopped = 0;
  s.after_null_call = [&] {
    ++runs;
    if (self && self->still_stopped()) ++stopped;
  };
  RemoteEndpoint host(std::move(s));
  self = &host;
  host.wait_ready();
  ASSERT_TRUE(host.ready()) << host.load_error();
  EXPECT_EQ(host.null_ns().size(), 6u);
  EXPECT_EQ(runs, 6);
  EXPECT_EQ(stopped, 6);
}

TEST(KernelHost, TheAnswerHookRunsWithTheStopSentAndNotYetWaitedFor) {
  // A device flavour probes the GPU there (HostSpec::on_answer): from the
  // answer, while the stop is delivered, so that the probe's end does not
  // depend on the stop's length. At each null call it runs once, given the
  // answer's time, before the calibration's hook; the SIGSTOP is already
  // sent and its report not yet taken by the judge (the host stops while
  // the hook waits, with nobody else sending it), and after the call the
  // host is stopped.
  HostSpec s = spec(KEVO_HOST_KERNEL, 5);
  RemoteEndpoint* self = nullptr;
  int answers = 0, stopped_in_hook = 0, right_time = 0, hooks_after = 0;
  s.on_answer = [&](std::chrono::steady_clock::time_point answered) {
    ++answers;
    if (!self) return;
    // The answer's time is the null call's, taken before the stop.
    if (answered == self->answered_at() && answered.time_since_epoch().count() > 0 &&
        answered <= std::chrono::steady_clock::now())
      ++right_time;
    // The stop's report, peeked at without taking it (WNOWAIT): there only
    // while the judge has not yet waited for it.
    for (int i = 0; i < 1000; ++i) {
      ::siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(self->pid()), &info, WSTOPPED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == self->pid()) {
        ++stopped_in_hook;
        break;
      }
      ::usleep(1000);
    }
  };
  s.after_null_call = [&] {
    if (answers == hooks_after + 1) ++hooks_after;
  };
  RemoteEndpoint host(std::move(s));
  self = &host;
  host.wait_ready();
  ASSERT_TRUE(host.ready()) << host.load_error();
  EXPECT_EQ(answers, 5);
  EXPECT_EQ(right_time, 5);
  EXPECT_EQ(stopped_in_hook, 5) << "the stop was not sent before the hook, or already waited for";
  EXPECT_EQ(hooks_after, 5) << "the calibration's hook did not follow each answer's";
  EXPECT_TRUE(host.still_stopped());
}

TEST(KernelHost, AHostResumedBehindTheJudgesBackIsSeenRunning) {
  // still_stopped() is what the timing loops ask after every pair (a host
  // that resumes itself, tests/cuda/adversarial/resumes_itself.cu): stopped
  // after loading, running once something else sends it SIGCONT, stopped
  // again after SIGSTOP, and nothing to say once it is reaped.
  RemoteEndpoint host(spec(KEVO_HOST_KERNEL, 0));
  host.wait_ready();
  ASSERT_TRUE(host.ready()) << host.load_error();
  EXPECT_TRUE(host.still_stopped());
  auto becomes = [&](bool stopped) {
    for (int i = 0; i < 2000; ++i) {
      if (host.still_stopped() == stopped) return true;
      ::usleep(1000);
    }
    return false;
  };
  ASSERT_EQ(::kill(host.pid(), SIGCONT), 0);
  EXPECT_TRUE(becomes(false)) << "a resumed host was still reported stopped";
  ASSERT_EQ(::kill(host.pid(), SIGSTOP), 0);
  EXPECT_TRUE(becomes(true)) << "a host stopped again was reported running";
  host.terminate();
  EXPECT_TRUE(host.still_stopped());
}

TEST(KernelHost, WithoutCalibrationNoNullCallIsMade) {
  RemoteEndpoint host(spec(KEVO_HOST_KERNEL, 0));
  host.wait_ready();
  ASSERT_TRUE(host.ready()) << host.load_error();
  EXPECT_TRUE(host.null_ns().empty());
}

TEST(KernelHost, TheJudgesKillAfterTheLastCallIsMarkedAsSuch) {
  RemoteEndpoint host(spec(KEVO_HOST_KERNEL, 4));
  host.wait_ready();
  ASSERT_TRUE(host.ready()) << host.load_error();
  EXPECT_EQ(host.null_ns().size(), 4u);
  EXPECT_TRUE(host.prime()) << "a host without a device has nothing to prime";
  host.terminate();
  EXPECT_LE(host.pid(), 0);
  EXPECT_TRUE(host.end().ended);
  EXPECT_TRUE(host.end().terminated);
}

// A mapping's path is its sixth field and starts with '/': an anonymous
// mapping's name, which the process sets itself (PR_SET_VMA_ANON_NAME),
// names no library and cannot put text into the verdict (the fourteenth
// session's red team: "[anon:x/libblas 7x33 1x1000]" was read as a path
// and quoted).
TEST(Libraries, AnAnonymousMappingsNameIsNoLibrary) {
  const std::string anon = "7f00-7f10 rw-p 0 00:00 0 [anon:x/libblas 7x33 1x1000]\n";
  EXPECT_EQ(kevo::native::forbidden_mapping(anon, {}), "");
  const std::string file = "7f00-7f10 r-xp 0 08:01 7 /usr/lib/x86_64-linux-gnu/libblas.so.3.11.0 (deleted)\n";
  EXPECT_EQ(kevo::native::forbidden_mapping(file, {}), "libblas.so.3.11.0 (blas)");
}

TEST(Libraries, AllowingCublasAllowsTheCublasLtItLoads) {
  const std::string maps =
      "7f00-7f10 r-xp 0 08:01 1 /usr/local/cuda/lib64/libcublasLt.so.13\n"
      "7f10-7f20 r-xp 0 08:01 2 /usr/local/cuda/lib64/libcublas.so.13\n";
  EXPECT_EQ(kevo::native::forbidden_mapping(maps, {"cublas"}), "");
  EXPECT_NE(kevo::native::forbidden_mapping(maps, {}).find("cublas"), std::string::npos);
  EXPECT_NE(kevo::native::forbidden_mapping(maps, {"cublasLt"}).find("libcublas.so"), std::string::npos)
      << "allowing cuBLASLt does not allow cuBLAS";
}
