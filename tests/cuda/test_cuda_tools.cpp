// The CUDA worker's host-side pieces that need no GPU: the GPU timing slot
// (file locks shared by every worker of a host) and the condensing of ncu
// and compute-sanitizer reports into verdict text; the judge's probe waits
// with a scripted probe, and the buckets of the probe's excess.
#include "probe_wait.hpp"
#include "profile.hpp"
#include "slot.hpp"
#include "visible_devices.hpp"
#include "kevo/cuda/probe_excess.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace cw = kevo::cuda::worker;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("kevo-slot-test-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

}  // namespace

// Two GpuSlot objects hold separate open file descriptions, so they exclude
// each other exactly as two worker processes do.
// The judge's wait after a call (probe_wait.hpp), with a probe that sleeps
// the scripted times: the GPU's time slices, as a host's work left running
// would hold the judge's probes up. The quiet threshold (50 ms) is far from
// both the held-up probes (80 ms) and the quiet ones (none).
namespace {
struct ScriptedProbe {
  std::vector<int> ms;   // each probe's sleep; past the end, quiet
  int made = 0;
  std::vector<std::chrono::steady_clock::time_point> started;
  void operator()() {
    started.push_back(std::chrono::steady_clock::now());
    const int t = made < static_cast<int>(ms.size()) ? ms[made] : 0;
    ++made;
    std::this_thread::sleep_for(std::chrono::milliseconds(t));
  }
};
double ns_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}
}  // namespace

TEST(ProbeWait, ProbesFollowWhileEachIsHeldUpAndEveryHeldUpOneCounts) {
  ScriptedProbe p{{10, 80, 80, 20}};
  const auto answered = std::chrono::steady_clock::now();
  const double ns = cw::wait_until_quiet(answered, 50e6, 5.0, std::ref(p));
  ASSERT_EQ(p.made, 4) << "the first, two held up, one quiet";
  EXPECT_GE(ns, 170e6) << "the held-up probes count";
  EXPECT_LE(ns, ns_between(answered, p.started[3])) << "the quiet one does not";
}

TEST(ProbeWait, AQuietSecondProbeEndsTheWaitAndDoesNotCount) {
  ScriptedProbe p{{30, 20}};
  const auto answered = std::chrono::steady_clock::now();
  const double ns = cw::wait_until_quiet(answered, 50e6, 5.0, std::ref(p));
  ASSERT_EQ(p.made, 2);
  EXPECT_GE(ns, 30e6) << "the first probe counts";
  EXPECT_LE(ns, ns_between(answered, p.started[1])) << "the quiet second (20 ms) does not";
}

TEST(ProbeWait, WithoutAThresholdOneProbeIsMade) {
  ScriptedProbe p{{0, 80, 80}};
  (void)cw::wait_until_quiet(std::chrono::steady_clock::now(), 0.0, 5.0, std::ref(p));
  EXPECT_EQ(p.made, 1);
}

TEST(ProbeWait, WorkThatNeverEndsFailsTheWaitAtTheLimit) {
  ScriptedProbe p{std::vector<int>(100, 80)};
  const auto answered = std::chrono::steady_clock::now();
  try {
    (void)cw::wait_until_quiet(answered, 50e6, 0.3, std::ref(p));
    FAIL() << "no error after " << p.made << " probes";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("still ran"), std::string::npos) << e.what();
  }
  EXPECT_LT(p.made, 10) << "the wait went on past its limit";
}

TEST(ProbeWait, AProbesErrorGoesThrough) {
  const auto answered = std::chrono::steady_clock::now();
  EXPECT_THROW(cw::wait_until_quiet(answered, 50e6, 5.0, [] { throw std::runtime_error("CUDA error"); }),
               std::runtime_error);
}

TEST(ProbeWait, HeldUpProbesBeforeAQuietOneAreWhatIsCounted) {
  ScriptedProbe p{{80, 80, 20}};
  const auto before = std::chrono::steady_clock::now();
  const double ns = cw::held_up_ns(50e6, 5.0, std::ref(p));
  ASSERT_EQ(p.made, 3) << "two held up, one quiet";
  EXPECT_GE(ns, 160e6);
  EXPECT_LE(ns, ns_between(before, p.started[2])) << "the quiet one does not count";
}

TEST(ProbeWait, AQuietFirstProbeCountsNothing) {
  ScriptedProbe p{{20, 80}};
  EXPECT_EQ(cw::held_up_ns(50e6, 5.0, std::ref(p)), 0.0);
  EXPECT_EQ(p.made, 1);
}

TEST(ProbeWait, WorkAfterTheFillThatNeverEndsFailsAtTheLimit) {
  ScriptedProbe p{std::vector<int>(100, 80)};
  EXPECT_THROW(cw::held_up_ns(50e6, 0.3, std::ref(p)), std::runtime_error);
  EXPECT_LT(p.made, 10);
}

// The hold's wait for foreign GPU work (wait_for_quiet_gpu) tolerates the
// limit and nothing else: a CUDA error of the probe must not pass for work
// that still ran.
TEST(ProbeWait, TheLimitIsAProbeLimitReachedAndAProbesErrorIsNot) {
  ScriptedProbe p{std::vector<int>(100, 80)};
  EXPECT_THROW(cw::held_up_ns(50e6, 0.2, std::ref(p)), cw::ProbeLimitReached);
  EXPECT_THROW(cw::wait_until_quiet(std::chrono::steady_clock::now(), 50e6, 0.2, std::ref(p)), cw::ProbeLimitReached);
  bool limit = false, other = false;
  try {
    (void)cw::held_up_ns(50e6, 5.0, [] { throw std::runtime_error("CUDA error of the judge's probe"); });
  } catch (const cw::ProbeLimitReached&) {
    limit = true;
  } catch (const std::runtime_error& e) {
    other = std::string(e.what()).find("CUDA error") != std::string::npos;
  }
  EXPECT_FALSE(limit) << "a probe's error was taken for the limit";
  EXPECT_TRUE(other);
}

TEST(ProbeExcess, BucketsAreBoundedAboveAndNamedByTheirBound) {
  namespace kc = kevo::cuda;
  ASSERT_EQ(kc::kProbeExcessBuckets, 6u);
  EXPECT_EQ(kc::probe_excess_bucket(-3.0), 0u) << "a probe shorter than its yardstick";
  EXPECT_EQ(kc::probe_excess_bucket(2.0), 0u) << "a bound belongs to its own bucket";
  EXPECT_EQ(kc::probe_excess_bucket(2.01), 1u);
  EXPECT_EQ(kc::probe_excess_bucket(10.0), 2u);
  EXPECT_EQ(kc::probe_excess_bucket(50.0), 4u);
  EXPECT_EQ(kc::probe_excess_bucket(50.5), 5u);
  EXPECT_EQ(kc::probe_excess_bucket(1e9), 5u);
  EXPECT_EQ(kc::probe_excess_phase(0), "probe_excess_le_2us");
  EXPECT_EQ(kc::probe_excess_phase(4), "probe_excess_le_50us");
  EXPECT_EQ(kc::probe_excess_phase(5), "probe_excess_above_50us");
}

TEST(GpuSlot, ExclusiveExcludesSharedAndSharedAllowsShared) {
  const fs::path dir = temp_dir();
  cw::GpuSlot timer, judge_a, judge_b;
  timer.open(dir.string(), "0000:19:00.0");
  judge_a.open(dir.string(), "0000:19:00.0");
  judge_b.open(dir.string(), "0000:19:00.0");
  EXPECT_TRUE(fs::exists(dir / "kevo-gpu-0000-19-00-0.lock"));

  // Two correctness holders at once: allowed.
  judge_a.lock_shared();
  judge_b.lock_shared();
  judge_b.unlock();

  // A timer waits for the shared holder to leave.
  std::atomic<bool> timing{false};
  std::thread t([&] {
    timer.lock_exclusive();
    timing = true;
    std::this_thread::sleep_for(300ms);
    timer.unlock();
    timing = false;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(timing.load()) << "the exclusive slot was granted while a shared holder was in";
  judge_a.unlock();
  for (int i = 0; i < 100 && !timing.load(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(timing.load());
  // While timing, a new correctness holder waits.
  std::atomic<bool> got{false};
  std::thread j([&] {
    judge_b.lock_shared();
    got = true;
    judge_b.unlock();
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(got.load()) << "shared slot granted during a timing";
  t.join();
  j.join();
  EXPECT_TRUE(got.load());
  EXPECT_GT(timer.exclusive_seconds(), 0.25);
  fs::remove_all(dir);
}

// A timer that has met its budget times on only while nobody waits: it sees
// a waiter for the shared slot and one for the exclusive slot, and no one
// once they have gone.
TEST(GpuSlot, TheHolderSeesWhoWaits) {
  const fs::path dir = temp_dir();
  cw::GpuSlot timer, judge, next_timer;
  for (cw::GpuSlot* s : {&timer, &judge, &next_timer}) s->open(dir.string(), "0000:19:00.0");
  timer.lock_exclusive();
  EXPECT_FALSE(timer.others_waiting());
  for (bool exclusive : {false, true}) {
    cw::GpuSlot& waiter = exclusive ? next_timer : judge;
    std::atomic<bool> got{false};
    std::thread t([&] {
      if (exclusive) waiter.lock_exclusive();
      else waiter.lock_shared();
      got = true;
      waiter.unlock();
    });
    bool seen = false;
    for (int i = 0; i < 200 && !seen; ++i) {
      seen = timer.others_waiting();
      if (!seen) std::this_thread::sleep_for(5ms);
    }
    EXPECT_TRUE(seen) << (exclusive ? "an exclusive" : "a shared") << " waiter was not seen";
    EXPECT_FALSE(got.load());
    timer.unlock();
    t.join();
    EXPECT_TRUE(got.load());
    timer.lock_exclusive();
    EXPECT_FALSE(timer.others_waiting()) << "a waiter that has left is still seen";
  }
  timer.unlock();
  cw::GpuSlot unopened;
  EXPECT_FALSE(unopened.others_waiting());
  fs::remove_all(dir);
}

TEST(GpuSlot, DifferentGpusDoNotExclude) {
  const fs::path dir = temp_dir();
  cw::GpuSlot a, b;
  a.open(dir.string(), "0000:19:00.0");
  b.open(dir.string(), "0000:3b:00.0");
  a.lock_exclusive();
  std::atomic<bool> got{false};
  std::thread t([&] {
    b.lock_exclusive();
    got = true;
    b.unlock();
  });
  for (int i = 0; i < 100 && !got.load(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(got.load()) << "the slot of one GPU blocked another GPU";
  t.join();
  a.unlock();
  fs::remove_all(dir);
}

TEST(GpuSlot, UnopenedIsNoOpAndBadDirIsClearError) {
  cw::GpuSlot s;
  s.lock_exclusive();
  s.unlock();
  EXPECT_EQ(s.exclusive_seconds(), 0.0);
  cw::GpuSlot bad;
  try {
    bad.open("/nonexistent-kevo-dir", "0000:19:00.0");
    FAIL() << "no error for a missing directory";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("lock_dir"), std::string::npos) << e.what();
  }
}

TEST(Ncu, SummaryFromRawCsv) {
  const std::string csv =
      "==PROF== Connected to process 123\n"
      "==PROF== Profiling \"axpy_kernel\": 0%....50%....100% - 9 passes\n"
      "\"ID\",\"Process ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"gpu__time_duration.sum\","
      "\"dram__throughput.avg.pct_of_peak_sustained_elapsed\",\"sm__throughput.avg.pct_of_peak_sustained_elapsed\","
      "\"sm__warps_active.avg.pct_of_peak_sustained_active\",\"sm__maximum_warps_per_active_cycle_pct\","
      "\"launch__registers_per_thread\",\"launch__shared_mem_per_block_static\","
      "\"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio\","
      "\"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio\","
      "\"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio\","
      "\"smsp__average_warps_issue_stalled_not_issued_per_issue_active.ratio\","
      "\"smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"nsecond\",\"%\",\"%\",\"%\",\"%\",\"register/thread\",\"byte\",\"\",\"\",\"\",\"\",\"\"\n"
      "\"0\",\"123\",\"axpy_kernel(float, const float *, float *, int)\",\"(256, 1, 1)\",\"(65536, 1, 1)\","
      "\"162,400\",\"91.5\",\"12.25\",\"85.1\",\"100\",\"16\",\"0\",\"30.5\",\"1.25\",\"0.5\",\"99\",\"0.1\"\n";
  const std::string s = cw::ncu_summary(csv);
  EXPECT_NE(s.find("axpy_kernel"), std::string::npos) << s;
  EXPECT_NE(s.find("162 us"), std::string::npos) << s;           // ns converted, thousands separator read
  EXPECT_NE(s.find("DRAM 91.5% of peak"), std::string::npos) << s;
  EXPECT_NE(s.find("shared 0 byte/block"), std::string::npos) << s;
  EXPECT_NE(s.find("SM 12.2"), std::string::npos) << s;
  EXPECT_NE(s.find("achieved occupancy 85.1% (theoretical 100%)"), std::string::npos) << s;
  EXPECT_NE(s.find("16 registers/thread"), std::string::npos) << s;
  // Top three stalls, largest first, without "not_issued".
  const auto ls = s.find("long_scoreboard 30.5"), wt = s.find("wait 1.25"), br = s.find("barrier 0.5");
  ASSERT_NE(ls, std::string::npos) << s;
  ASSERT_NE(wt, std::string::npos) << s;
  ASSERT_NE(br, std::string::npos) << s;
  EXPECT_LT(ls, wt);
  EXPECT_LT(wt, br);
  EXPECT_EQ(s.find("not_issued"), std::string::npos) << s;
  EXPECT_EQ(s.find("math_pipe"), std::string::npos) << "only three stalls: " << s;
}

// The table is ncu's output, which the candidate's process can write into
// (red team 22): a units row shorter than the header (here empty) was
// indexed by the header's columns, read out of bounds. Such a row has no
// units: the times are taken as they are.
TEST(Ncu, AUnitsRowShorterThanTheHeaderIsReadWithinIt) {
  const std::string csv =
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"launch__shared_mem_per_block_static\"\n"
      "\"\"\n"
      "\"0\",\"k\",\"12\",\"64\"\n";
  const std::string s = cw::ncu_summary(csv);
  EXPECT_NE(s.find("kernel k"), std::string::npos) << s;
  EXPECT_NE(s.find(": 12 us"), std::string::npos) << s;
  EXPECT_NE(s.find("shared 64 byte/block"), std::string::npos) << s;
}

TEST(Ncu, NoKernelProfiledIsSaid) {
  EXPECT_NE(cw::ncu_summary("==PROF== Connected\n==PROF== Disconnected\n").find("no kernel"), std::string::npos);
}

TEST(Ncu, CsvQuoting) {
  const auto rows = cw::parse_csv("\"a,b\",\"say \"\"hi\"\"\",3\r\nx,,z\n");
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(rows[0].size(), 3u);
  EXPECT_EQ(rows[0][0], "a,b");
  EXPECT_EQ(rows[0][1], "say \"hi\"");
  EXPECT_EQ(rows[1][1], "");
}

TEST(Sanitizer, SummaryKeepsErrorsNotBanner) {
  const std::string report =
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ write of size 4 bytes\n"
      "=========     at oob_kernel(float *, int)+0x70 in candidate.cu:12\n"
      "=========     by thread (255,0,0) in block (4095,0,0)\n"
      "=========     Address 0x7f00 is out of bounds\n"
      "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
      "=========         Host Frame: [0x2dfbef]\n"
      "========= ERROR SUMMARY: 1 error\n";
  const std::string s = cw::sanitizer_summary(report);
  EXPECT_NE(s.find("Invalid __global__ write of size 4 bytes"), std::string::npos) << s;
  EXPECT_NE(s.find("out of bounds"), std::string::npos) << s;
  EXPECT_EQ(s.find("COMPUTE-SANITIZER"), std::string::npos) << s;
  EXPECT_EQ(s.find("Host Frame"), std::string::npos) << s;
}

TEST(CudaTools, AFailedProfileQuotesNothingOfNcusConsole) {
  // The console holds what the candidate printed; the profile child runs it
  // without the policy, where it can read the task's hidden shapes.
  const std::string console =
      "hidden M=1000,N=777,K=513 from task.json\n"
      "==PROF== Connected to process 4242\n"
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters\n";
  const std::string s = cw::ncu_failure(false, 1, console);
  EXPECT_NE(s.find("profiler: ncu failed (exit code 1)"), std::string::npos) << s;
  EXPECT_NE(s.find("performance counters are not open to this user (ERR_NVGPUCTRPERM)"), std::string::npos) << s;
  for (const char* leak : {"1000", "777", "513", "4242", "task.json", "permission to access"})
    EXPECT_EQ(s.find(leak), std::string::npos) << leak << ": " << s;
  const std::string other = cw::ncu_failure(true, -1, "M=1000 and nothing ncu wrote\n");
  EXPECT_NE(other.find("profiler: ncu failed (timed out)"), std::string::npos) << other;
  EXPECT_NE(other.find("its console is not quoted"), std::string::npos) << other;
  EXPECT_EQ(other.find("1000"), std::string::npos) << other;
}

TEST(Child, RunChildTimesOutAndKillsTheGroup) {
  const fs::path dir = temp_dir();
  const auto t0 = std::chrono::steady_clock::now();
  const cw::ChildResult r = cw::run_child({"/bin/sh", "-c", "sleep 30 & sleep 30"}, dir / "log", 0.5);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  const cw::ChildResult ok = cw::run_child({"/bin/sh", "-c", "echo hello; exit 3"}, dir / "log2", 10);
  EXPECT_FALSE(ok.timed_out);
  EXPECT_EQ(ok.exit_code, 3);
  fs::remove_all(dir);
}

// The worker's device narrowing (docs/cuda.md, device binding), on the
// environment it would see; the variables are restored after each case.
class VisibleDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* k : {"CUDA_VISIBLE_DEVICES", "KEVO_DEVICE_INDEX"}) {
      const char* v = std::getenv(k);
      saved_.push_back({k, v ? std::optional<std::string>(v) : std::nullopt});
    }
  }
  void TearDown() override {
    for (const auto& [k, v] : saved_) {
      if (v)
        ::setenv(k.c_str(), v->c_str(), 1);
      else
        ::unsetenv(k.c_str());
    }
  }
  static std::string env(const char* k) {
    const char* v = std::getenv(k);
    return v ? v : "<unset>";
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(VisibleDevices, ListParsing) {
  using kevo::cuda::worker::visible_device_list;
  EXPECT_EQ(visible_device_list("0,1"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(visible_device_list(" GPU-ab12 , GPU-cd34,,"), (std::vector<std::string>{"GPU-ab12", "GPU-cd34"}));
  EXPECT_TRUE(visible_device_list("").empty());
}

TEST_F(VisibleDevices, WithoutAListTheOrdinalBecomesTheOnlyVisibleDevice) {
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(kevo::cuda::worker::narrow_visible_devices(3), 0);
  EXPECT_EQ(env("CUDA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(env("KEVO_DEVICE_INDEX"), "0");
}

TEST_F(VisibleDevices, WithAListTheEntryAtTheOrdinalIsKept) {
  ::setenv("CUDA_VISIBLE_DEVICES", "GPU-ab12,GPU-cd34,5", 1);
  EXPECT_EQ(kevo::cuda::worker::narrow_visible_devices(1), 0);
  EXPECT_EQ(env("CUDA_VISIBLE_DEVICES"), "GPU-cd34");
  // A child of the worker (sanitizer, ncu) narrows again to the same GPU.
  EXPECT_EQ(kevo::cuda::worker::narrow_visible_devices(0), 0);
  EXPECT_EQ(env("CUDA_VISIBLE_DEVICES"), "GPU-cd34");
}

TEST_F(VisibleDevices, AnOrdinalOutsideTheListChangesNothing) {
  ::setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);
  ::unsetenv("KEVO_DEVICE_INDEX");
  EXPECT_EQ(kevo::cuda::worker::narrow_visible_devices(2), 2);
  EXPECT_EQ(env("CUDA_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(env("KEVO_DEVICE_INDEX"), "<unset>");
  // An empty list hides every GPU; it stays so, and opening device 0 fails.
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  EXPECT_EQ(kevo::cuda::worker::narrow_visible_devices(0), 0);
  EXPECT_EQ(env("CUDA_VISIBLE_DEVICES"), "");
}
