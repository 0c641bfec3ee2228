// The red team's attacks on the CPU judge (issue 15), each judged through a
// kevo::cpu::CpuBackend and held to the verdict its honest work earns: the
// attack is caught (wrong_answer, a sandbox violation, forbidden...) or it
// gets no more than the plain kernel (a speedup under twice the plain
// kernel's, judged in the same test, and a reference median not slowed by
// more than 1.6x). Candidates: tests/adversarial/redteam/ (the 64x256
// rowsum task) and redteam/timing/ (the 512x4096 one).
//
// Attacks that succeed today are tests named DISABLED_*: each asserts the
// honest verdict (and so fails while the hole is open) and says where the
// hole is. Run them with --gtest_also_run_disabled_tests.
#include "kevo/core/task.hpp"
#include "kevo/cpu/cpu_backend.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using kevo::Status;

namespace {

const fs::path kDir = KEVO_ADVERSARIAL_DIR;
const fs::path kAttacks = kDir / "redteam";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << "cannot read " << p;
  return s.str();
}

std::string status_text(const kevo::Verdict& v) { return std::string(kevo::to_string(v.status)); }

void print(const std::string& name, const kevo::Verdict& v) {
  std::printf("%-26s %-14s speedup %6.3f  cand %9.1f us  ref %9.1f us  %s\n", name.c_str(), status_text(v).c_str(),
              v.speedup, v.cand_median_ns / 1e3, v.ref_median_ns / 1e3, v.message.substr(0, 300).c_str());
  if (!v.output_tail.empty()) std::printf("%-26s   output: %s\n", "", v.output_tail.substr(0, 300).c_str());
}

// The small task (64x256 plus hidden and drawn shapes): correctness
// attacks, judged two at a time.
kevo::cpu::CpuOptions small_options(double wall_seconds = 6) {
  nlohmann::json cfg = {
      {"cache_dir", ""},
      {"worker", KEVO_CPU_WORKER},
      {"compile_jobs", 2},
      {"eval_jobs", 2},
      {"limits", {{"wall_seconds", wall_seconds}, {"memory_mb", 1024}, {"output_kb", 64}, {"processes", 256}}},
      {"timing", {{"warmup", 0}, {"min_repeats", 2}, {"max_repeats", 5}, {"budget_seconds", 0.02}, {"flush_kb", 256}}},
  };
  kevo::StrictObject obj(cfg, "test-config.json", "/backend/cpu");
  return kevo::cpu::parse_cpu_options(obj);
}

// The timed task (512x4096, about 2 ms a call), as TimingOnlyRealWorkCanMove
// judges it.
kevo::cpu::CpuOptions timing_options() {
  nlohmann::json cfg = {
      {"cache_dir", ""},
      {"worker", KEVO_CPU_WORKER},
      {"compile_jobs", 2},
      {"limits", {{"wall_seconds", 20}, {"memory_mb", 1024}}},
      {"timing", {{"warmup", 1}, {"min_repeats", 5}, {"max_repeats", 40}, {"budget_seconds", 0.15}}},
  };
  kevo::StrictObject obj(cfg, "test-config.json", "/backend/cpu");
  return kevo::cpu::parse_cpu_options(obj);
}

std::shared_ptr<kevo::Task> small_task() { return std::make_shared<kevo::Task>(kevo::load_task(kDir / "task")); }
std::shared_ptr<kevo::Task> timed_task() {
  return std::make_shared<kevo::Task>(kevo::load_task(kDir / "timing" / "task"));
}

struct Honest {
  std::set<Status> statuses;     // the verdicts its honest work may earn
  std::string message_part;      // "" = any
  std::string output_part;       // in output_tail; "" = any
};

// Every candidate of redteam/ judged in the table below; the attacks that
// succeed (holes) are judged in tests of their own.
const std::map<std::string, Honest> kCorrectnessAttacks = {
    // The control block: whatever the host writes there is a claim of a
    // failure (believed) or is not read at all.
    {"ctl_message_unterminated", {{Status::runtime_error}, "threw an exception AAAA", ""}},
    {"ctl_claim_bad_alloc", {{Status::memory_limit}, "std::bad_alloc", ""}},
    {"ctl_bad_outcome", {{Status::runtime_error}, "threw an exception", ""}},
    {"ctl_garbage_descriptor", {{Status::correct}, "", ""}},
    {"ctl_fake_sigxcpu", {{Status::timeout}, "CPU-time limit", ""}},
    {"alloc_claim_then_segv", {{Status::memory_limit}, "an allocation of 1 bytes failed", ""}},
    {"done_early", {{Status::wrong_answer}, "", ""}},
    // Ends the judge might misread.
    {"exit_159", {{Status::runtime_error}, "sandbox violation", ""}},
    {"exit_signal_code", {{Status::runtime_error}, "exit code 139", ""}},
    // The arena, from the host's side.
    {"munmap_arena", {{Status::runtime_error}, "SIGSEGV", ""}},
    {"mprotect_arena", {{Status::runtime_error}, "SIGSEGV", ""}},
    {"mremap_grow", {{Status::runtime_error}, "SIGBUS", ""}},
    {"madvise_remove_inputs", {{Status::wrong_answer}, "modified its input", ""}},
    {"madvise_dontneed_inputs", {{Status::correct}, "", ""}},
    {"free_arena", {{Status::runtime_error}, "SIGABRT", ""}},
    // Signals to itself.
    {"self_sigstop", {{Status::correct, Status::timeout}, "", ""}},
    {"self_sigtrap", {{Status::runtime_error}, "SIGTRAP", ""}},
    {"sigcont_spam", {{Status::runtime_error}, "sandbox violation", ""}},   // SIGCONT to itself is a violation
    {"kill_tids", {{Status::runtime_error}, "forbidden system call 62 (kill", ""}},
    // Processes, kernel facilities, its own sandbox.
    {"vfork_call", {{Status::runtime_error}, "sandbox violation: forbidden system call 58", ""}},
    {"clone_vm_process", {{Status::runtime_error}, "clone (a process, not a thread)", ""}},
    {"clone3_call", {{Status::correct}, "", "clone3 -1 errno 38"}},
    {"clone_flags",
     {{Status::correct},
      "",
      "clone: parent=refused newns=refused newnet=refused newipc=refused newuts=refused newpid=refused newuser=refused"}},
    {"io_uring", {{Status::runtime_error}, "sandbox violation: forbidden system call 425", ""}},
    {"userfaultfd_call", {{Status::runtime_error}, "sandbox violation: forbidden system call 323", ""}},
    {"personality_call", {{Status::runtime_error}, "sandbox violation: forbidden system call 135", ""}},
    {"seccomp_filter", {{Status::runtime_error}, "sandbox violation: forbidden system call 317", ""}},
    {"prctl_calls", {{Status::correct}, "", "prctl results: -1 -1 -1 -1 -1 -1 -1 dumpable now 0"}},
    {"setrlimit_raise", {{Status::correct}, "", "raise as -1 cpu -1 nofile -1"}},
    {"sched_tids", {{Status::correct}, "", "fifo -1 nice -1 others 0"}},
    {"proc_scan", {{Status::correct}, "", "visible pids 1 self 1 parent 0"}},
    {"maps_flood", {{Status::correct}, "", ""}},
    // A library it may not call, not hidden: the control for hidden_blas.
    {"plain_blas", {{Status::forbidden}, "libblas", ""}},
};

// Candidates of redteam/ with a test of their own.
const std::set<std::string> kOwnTests = {"arena_size_echo", "echo_hidden_shape", "echo_hidden_later", "forbidden_echo",
                                         "hidden_blas",     "read_manifest",     "seed_guess",        "thread_storm",
                                         "time_channel",    "wrong_after_hidden", "wrong_when_large"};

kevo::Verdict judge_one(kevo::cpu::CpuBackend& backend, const std::shared_ptr<kevo::Task>& task, const fs::path& file,
                        std::uint64_t seed = 3) {
  const kevo::Verdict v = backend.evaluate(task, read(file), seed);
  print(file.stem().string(), v);
  return v;
}

// The plain kernel and an attack on the timed task, judged by one backend:
// the attack must be caught or earn no more than the plain kernel.
void expect_no_gain(const std::string& attack, bool may_be_caught) {
  auto task = timed_task();
  kevo::cpu::CpuBackend backend(timing_options());
  backend.prepare(*task);
  const kevo::Verdict plain = judge_one(backend, task, kDir / "timing" / "candidates" / "plain.cpp");
  ASSERT_EQ(plain.status, Status::correct) << plain.message;
  const kevo::Verdict v = judge_one(backend, task, kAttacks / "timing" / (attack + ".cpp"));
  if (may_be_caught && v.status != Status::correct) {
    EXPECT_TRUE(v.status == Status::wrong_answer || v.status == Status::runtime_error || v.status == Status::timeout)
        << attack << ": " << status_text(v) << ": " << v.message;
    return;
  }
  ASSERT_EQ(v.status, Status::correct) << attack << ": " << v.message;
  EXPECT_LT(v.speedup, 2.0 * plain.speedup) << attack << " gained from its attack: " << v.message;
  EXPECT_LT(v.ref_median_ns, 1.6 * plain.ref_median_ns) << attack << " slowed the reference: " << v.message;
}

}  // namespace

TEST(RedTeam, EveryAttackOnTheSmallTaskGetsItsHonestVerdict) {
  auto task = small_task();
  kevo::cpu::CpuBackend backend(small_options());
  backend.prepare(*task);

  // Every candidate file has an expectation (or a test of its own), and
  // every expectation a file.
  std::map<std::uint64_t, std::string> ids;
  std::uint64_t next = 1;
  for (const auto& e : fs::directory_iterator(kAttacks)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().stem().string();
    if (kOwnTests.count(name)) continue;
    ASSERT_TRUE(kCorrectnessAttacks.count(name)) << "no expectation for redteam/" << name << ".cpp";
    ids[next] = name;
    backend.submit(kevo::EvalRequest{next, task, read(e.path()), 42});
    ++next;
  }
  ASSERT_EQ(ids.size(), kCorrectnessAttacks.size());

  std::map<std::string, kevo::Verdict> got;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (got.size() < ids.size() && std::chrono::steady_clock::now() < until)
    for (auto& r : backend.poll(std::chrono::milliseconds(500))) {
      ASSERT_TRUE(ids.count(r.id)) << "unknown id " << r.id;
      ASSERT_FALSE(got.count(ids[r.id])) << "id " << r.id << " came back twice";
      got.emplace(ids[r.id], std::move(r.verdict));
    }
  ASSERT_EQ(got.size(), ids.size()) << "verdicts were lost";
  for (const auto& [name, v] : got) print(name, v);

  for (const auto& [name, want] : kCorrectnessAttacks) {
    const kevo::Verdict& v = got.at(name);
    EXPECT_EQ(want.statuses.count(v.status), 1u) << name << ": got " << status_text(v) << ": " << v.message
                                               << "\noutput: " << v.output_tail.substr(0, 400);
    if (!want.message_part.empty()) {
      EXPECT_NE(v.message.find(want.message_part), std::string::npos) << name << ": " << v.message;
    }
    if (!want.output_part.empty()) {
      EXPECT_NE(v.output_tail.find(want.output_part), std::string::npos) << name << ": " << v.output_tail;
    }
    // A message is cut at its field (1023 bytes; a control byte shows as a
    // 3-byte Control Picture).
    EXPECT_LT(v.message.size(), 3 * 1023u + 200u) << name;
  }

  // The engine is in working order: the seed is still correct, nothing of
  // the attacks was left unreaped.
  const kevo::Verdict again = backend.evaluate(task, read(kDir / "task" / "seed.cpp"), 7);
  EXPECT_EQ(again.status, Status::correct) << again.message;
  int st;
  errno = 0;
  EXPECT_EQ(waitpid(-1, &st, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "a worker or compiler was left unreaped";
}

TEST(RedTeam, TimingAttacksThatAreCaught) {
  // Cutting corners only in timed calls (told apart by the control block's
  // poison_allocations word): every timed output is checked.
  auto task = timed_task();
  kevo::cpu::CpuBackend backend(timing_options());
  backend.prepare(*task);
  const kevo::Verdict v = judge_one(backend, task, kAttacks / "timing" / "phase_probe.cpp");
  EXPECT_EQ(v.status, Status::wrong_answer) << v.message;
  ASSERT_TRUE(v.mismatch.has_value()) << v.message;
  EXPECT_EQ(v.mismatch->trial.rfind("timed call", 0), 0u) << v.mismatch->trial;
}

TEST(RedTeam, RequeuingTheJudgesWaiterGainsNothing) { expect_no_gain("futex_requeue", false); }

// HOLE 1 (closed; see below): a candidate resumed itself while the judge
// believed it stopped.
// The freeze is SIGSTOP / SIGCONT job control (backends/native/judge/
// endpoint.cpp, RemoteEndpoint::stop_and_wait and call), and the policy
// allows timer_create with any sigevent (backends/sandbox/src/seccomp.cpp,
// always_allowed: timer_create / timer_settime). A timer whose signal is
// SIGCONT is sent by the kernel: it continues the stopped host (SIGCONT's
// effect does not depend on the PID namespace's signal rules), so the
// candidate's threads run while the judge loads the next inputs, flushes
// and times the reference. timer_precompute computes the next call's
// answer as soon as the judge has loaded its inputs (the outputs turn into
// the poison NaN then), before the call is posted, and pads the call to a
// quarter of the honest time: measured speedups 3.6x-4.4x against the
// plain kernel's 0.6x-1.9x on the 2-core VM, every output correct.
// Closed: timer_create and a SIGCONT to itself are violations under the CPU
// policy (backends/sandbox/src/seccomp.cpp), fcntl may not choose a signal,
// and the judge checks the candidate's process is still stopped before it
// compares (Judge::check_still_stopped) and kills one that does not stop.
TEST(RedTeam, TimerSigcontCannotPrecomputeTheNextCall) { expect_no_gain("timer_precompute", true); }

// HOLE 1, second use: the same resume keeps two threads streaming through
// memory while the judge times the reference: its median grew 2.3x-2.5x
// (reference 5.7-6.6 ms against 2.4-2.6 ms beside the plain kernel), the
// speedup 1.9x-2.4x for an honest kernel. The attack can also hang its own
// judgement (a SIGCONT that lands while the judge's stop is in progress
// cancels it and the judge's blocking wait4(WUNTRACED) never returns:
// timeout), so it is tuned with a 20 ms delay.
TEST(RedTeam, TimerSigcontCannotSlowTheReference) { expect_no_gain("timer_busy", true); }

// The judgement's seed is small or made from small numbers (kevo eval's
// --seed; a run's from its config seed and the candidate's id), and the
// inputs were a function of it alone: seed_guess rebuilt the judge's
// generator and found the seed from its first inputs in 0.2 s, and with it
// every timed call's inputs (timing/seed_precompute answered the timed
// calls from a table computed at its first call: correct at 28x where the
// honest kernel got 2.2x; the fourteenth session's red team). The inputs
// and the drawn shapes are now keyed by a secret of each judgement
// (InputKey in backends/native/judge/space.hpp).
TEST(RedTeam, TheSeedDoesNotGiveTheInputsAway) {
  auto task = small_task();
  kevo::cpu::CpuBackend backend(small_options(20));
  backend.prepare(*task);
  for (const std::uint64_t seed : {1u, 3u}) {
    const kevo::Verdict v = judge_one(backend, task, kAttacks / "seed_guess.cpp", seed);
    EXPECT_EQ(v.status, Status::runtime_error) << v.message;
    EXPECT_EQ(v.message.find("judgement seed ="), std::string::npos) << "seed " << seed << ": " << v.message;
    EXPECT_NE(v.message.find("seed not found"), std::string::npos) << v.message;
  }
}
TEST(RedTeam, ATableOfTheTimedCallsOutputsGainsNothing) { expect_no_gain("seed_precompute", false); }

// HOLE 2 (closed: the CPU policy traps anonymous or writable executable
// mappings and mprotect/pkey_mprotect to PROT_EXEC, so code no mapped file
// names cannot run): the library policy checks the files the candidate's process has
// mapped (backends/native/judge/session.cpp, run_session: forbidden_mapping
// of /proc/PID/maps after loading and after the protocol;
// backends/native/src/libraries.cpp matches file names). hidden_blas
// dlopen()s libblas.so.3 and copies its mappings into anonymous memory at
// the same addresses (mmap MAP_FIXED, allowed), so no maps line names the
// file: the verdict is correct, not forbidden. plain_blas (the same call,
// not hidden) is forbidden.
TEST(RedTeam, AHiddenLibraryIsStillForbidden) {
  auto task = small_task();
  kevo::cpu::CpuBackend backend(small_options());
  backend.prepare(*task);
  const kevo::Verdict v = judge_one(backend, task, kAttacks / "hidden_blas.cpp");
  // Forbidden (the library was seen mapped) or a violation (the copy could
  // not be made executable): never correct.
  const bool violation = v.status == Status::runtime_error && v.message.find("sandbox violation") != std::string::npos;
  EXPECT_TRUE(v.status == Status::forbidden || violation) << v.message;
}

// HOLE 3 (documented in verdicts.md, "Reading files"; listed here because
// of where it leads): the hosts' mounts are read-only, not hidden
// (backends/sandbox/src/isolation.cpp, harden_filesystem), so a candidate
// can walk the file system, find its task's task.json and throw its hidden
// shapes in an exception's text, which reaches the verdict's message and
// the feedback (the next prompt): the feedback redacts the hidden shape's
// label ("hidden M=7,N=33"), not the manifest's JSON.
TEST(RedTeam, HiddenShapesDoNotReachTheFeedback) {
  auto task = small_task();
  kevo::cpu::CpuBackend backend(small_options(20));
  backend.prepare(*task);
  const kevo::Verdict v = judge_one(backend, task, kAttacks / "read_manifest.cpp");
  for (const std::string* text : {&v.message, &v.feedback, &v.output_tail})
    EXPECT_EQ(text->find("\"M\": 7, \"N\": 33"), std::string::npos) << "the hidden shapes leaked: " << *text;
}

// A candidate sees its own arguments: at a hidden shape it can print them
// or throw them in an exception's text, and the verdict's message and
// output would carry them into the feedback (the next prompt). The
// verdict keeps them (the lineage is the user's); the feedback of a
// failure at a hidden shape shows neither text the candidate wrote nor the
// sizes.
TEST(RedTeam, AHiddenShapeEchoedByTheCandidateDoesNotReachTheFeedback) {
  auto task = small_task();
  kevo::cpu::CpuBackend backend(small_options(20));
  backend.prepare(*task);
  const kevo::Verdict v = judge_one(backend, task, kAttacks / "echo_hidden_shape.cpp");
  print("echo_hidden_shape", v);
  EXPECT_EQ(v.status, Status::runtime_error) << v.message;
  // The attack reached a hidden shape and wrote its sizes (the judge's own
  // record keeps them).
  EXPECT_NE(v.message.find("rows 7 cols 33"), std::string::npos) << v.message;
  EXPECT_NE(v.output_tail.find("rows 7 cols 33"), std::string::npos) << v.output_tail;
  for (const char* leak : {"rows 7", "cols 33", "M=7", "N=33"})
    EXPECT_EQ(v.feedback.find(leak), std::string::npos) << "'" << leak << "' in the feedback:\n" << v.feedback;
  EXPECT_NE(v.feedback.find("a hidden test shape"), std::string::npos) << v.feedback;
}

// The candidate's process lives for the whole judgement: once it has been
// called at a hidden shape, it can fail later, at a visible shape, with
// the hidden sizes in what it prints and throws (echo_hidden_later) or in
// the values it computes, which the feedback's errors quote
// (wrong_after_hidden: a maximum absolute error of 7033 for M=7, N=33).
// The feedback of any failure after a hidden shape has run shows none of
// it (red team 22: it was redacted only for failures at a hidden shape).
TEST(RedTeam, AFailureAfterAHiddenShapeDoesNotCarryItIntoTheFeedback) {
  auto task = small_task();
  kevo::cpu::CpuBackend backend(small_options(20));
  backend.prepare(*task);
  const kevo::Verdict echo = judge_one(backend, task, kAttacks / "echo_hidden_later.cpp");
  EXPECT_EQ(echo.status, Status::runtime_error) << echo.message;
  // It got there: the judge's own record keeps what it printed.
  EXPECT_NE(echo.output_tail.find("rows 7 cols 33"), std::string::npos) << echo.output_tail;
  const kevo::Verdict wrong = judge_one(backend, task, kAttacks / "wrong_after_hidden.cpp");
  EXPECT_EQ(wrong.status, Status::wrong_answer) << wrong.message;
  EXPECT_NEAR(wrong.max_abs_error, 7033.0, 1.0) << wrong.message;
  for (const kevo::Verdict* v : {&echo, &wrong}) {
    for (const char* leak : {"rows 7", "cols 33", "703", "7.03", "M=7", "N=33"})
      EXPECT_EQ(v->feedback.find(leak), std::string::npos) << "'" << leak << "' in the feedback:\n" << v->feedback;
    EXPECT_NE(v->feedback.find("hidden test shape"), std::string::npos) << v->feedback;
  }
}

// The small task with other hidden shapes, written to a folder of its own.
std::shared_ptr<kevo::Task> small_task_hiding(const nlohmann::json& hidden, const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kevo-redteam-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* f : {"reference.cpp", "seed.cpp"}) fs::copy_file(kDir / "task" / f, dir / f);
  nlohmann::json j = nlohmann::json::parse(read(kDir / "task" / "task.json"));
  j["name"] = "rowsum_" + name;
  j["shapes"]["hidden"] = hidden;
  std::ofstream(dir / "task.json") << j.dump(2);
  return std::make_shared<kevo::Task>(kevo::load_task(dir));
}

// The candidate's process maps its argument arena from its start and can
// read its size (/proc/self/maps) at its first call, a visible shape,
// and fail there, before any hidden shape has run: such a failure's
// feedback is not withheld. The arena was as large as the largest shape's
// buffers, hidden ones included, so a hidden shape larger than the visible
// one and the judgement's drawn ones was spelled out by the size
// (arena_size_echo). Now the arena's size depends on the visible shapes
// and the draw space's caps only: the same task with other hidden shapes
// gives the same feedback. A hidden shape larger than those caps made the
// arena larger, so every failure's feedback was withheld, and the timed
// process could still read the size (and put it in its speedup); now such
// a shape runs in a second process of the candidate's, started after the
// first one's timing: the first one's arena, and so its feedback, is the
// same as without that shape.
TEST(RedTeam, TheArenasSizeSaysNothingOfTheHiddenShapes) {
  kevo::cpu::CpuBackend backend(small_options(20));
  // Hidden shapes within the draw space's caps (max_elements 65536 per
  // buffer): smaller than the visible 64x256, or larger (100x1000 is
  // 400 kB of A, more than any drawn A).
  const std::vector<std::pair<std::string, nlohmann::json>> within = {
      {"small", {{{"M", 7}, {"N", 33}}, {{"M", 1}, {"N", 1000}}}},
      {"large", {{{"M", 100}, {"N", 1000}}}},
      {"larger", {{{"M", 3}, {"N", 5}}, {{"M", 120}, {"N", 900}}}},
  };
  std::string first;
  std::vector<fs::path> dirs;
  for (const auto& [name, hidden] : within) {
    auto task = small_task_hiding(hidden, name);
    dirs.push_back(task->manifest_path.parent_path());
    backend.prepare(*task);
    const kevo::Verdict v = judge_one(backend, task, kAttacks / "arena_size_echo.cpp");
    EXPECT_EQ(v.status, Status::runtime_error) << name << ": " << v.message;
    // The channel is open (the size reaches the feedback) and says the same
    // whatever the hidden shapes are.
    EXPECT_NE(v.feedback.find("arena bytes "), std::string::npos) << name << ":\n" << v.feedback;
    if (first.empty()) first = v.feedback;
    EXPECT_EQ(v.feedback, first) << "hidden shapes '" << name << "' changed what the candidate saw";
  }
  // A hidden shape larger than the caps (300x1500: 1.8 MB of A): the
  // candidate's first process sees the same arena as above, and its
  // failure there is told as it is.
  auto task = small_task_hiding({{{"M", 300}, {"N", 1500}}}, "beyond");
  dirs.push_back(task->manifest_path.parent_path());
  backend.prepare(*task);
  const kevo::Verdict v = judge_one(backend, task, kAttacks / "arena_size_echo.cpp");
  EXPECT_EQ(v.status, Status::runtime_error) << v.message;
  EXPECT_EQ(v.feedback, first) << "the hidden 300x1500 changed what the candidate saw";
  // The shape is judged, in the second process: an honest kernel is
  // correct and one wrong there only is wrong, its feedback withheld.
  const kevo::Verdict honest = judge_one(backend, task, kDir / "task" / "seed.cpp");
  EXPECT_EQ(honest.status, Status::correct) << honest.message;
  EXPECT_GT(honest.speedup, 0.0) << honest.message;
  const kevo::Verdict large = judge_one(backend, task, kAttacks / "wrong_when_large.cpp");
  EXPECT_EQ(large.status, Status::wrong_answer) << large.message;
  EXPECT_NE(large.message.find("300"), std::string::npos) << large.message;
  EXPECT_NE(large.feedback.find("hidden test shape"), std::string::npos) << large.feedback;
  EXPECT_EQ(large.feedback.find("1500"), std::string::npos) << large.feedback;
  for (const auto& d : dirs) fs::remove_all(d);
}

// Times as a channel: time_channel spins 300 us per distinct shape it has
// seen other than the visible one, and computes honestly. With the hidden
// shapes judged before the timing, its timed medians (which a correct
// verdict's feedback reports) grew with the number of hidden shapes: 4
// hidden shapes against 1 gave a median about twice as long. The timing
// now comes before any hidden shape: the medians do not depend on them.
TEST(RedTeam, TimesSayNothingOfTheHiddenShapes) {
  kevo::cpu::CpuBackend backend(small_options(20));
  const std::vector<std::pair<std::string, nlohmann::json>> variants = {
      {"one", {{{"M", 7}, {"N", 33}}}},
      {"four", {{{"M", 7}, {"N", 33}}, {{"M", 1}, {"N", 1000}}, {{"M", 3}, {"N", 5}}, {{"M", 100}, {"N", 1000}}}},
  };
  std::vector<double> medians;
  std::vector<fs::path> dirs;
  for (const auto& [name, hidden] : variants) {
    auto task = small_task_hiding(hidden, "times-" + name);
    dirs.push_back(task->manifest_path.parent_path());
    backend.prepare(*task);
    const kevo::Verdict v = judge_one(backend, task, kAttacks / "time_channel.cpp");
    ASSERT_EQ(v.status, Status::correct) << name << ": " << v.message;
    ASSERT_GT(v.cand_median_ns, 250e3) << "it spins for every drawn shape it saw";
    medians.push_back(v.cand_median_ns);
  }
  for (const auto& d : dirs) fs::remove_all(d);
  const double ratio = medians[1] / medians[0];
  std::printf("[ times    ] median with 1 hidden shape %.0f us, with 4: %.0f us, ratio %.2f\n", medians[0] / 1e3,
              medians[1] / 1e3, ratio);
  EXPECT_LT(ratio, 1.3) << "the timed medians tell how many hidden shapes the task has";
  EXPECT_GT(ratio, 1 / 1.3);
}

// A `forbidden` verdict keeps kevo's finding in its feedback (the library
// the candidate's process loaded) after a hidden shape has run, but the
// candidate's output went with it: forbidden_echo prints every size it is
// called with and loads libblas.so.3, and the feedback quoted the hidden
// sizes (the fourteenth session's red team). The judge's record keeps the
// output.
TEST(RedTeam, AForbiddenVerdictAfterAHiddenShapeCarriesNoOutput) {
  auto task = small_task();
  kevo::cpu::CpuBackend backend(small_options(20));
  backend.prepare(*task);
  const kevo::Verdict v = judge_one(backend, task, kAttacks / "forbidden_echo.cpp");
  EXPECT_EQ(v.status, Status::forbidden) << v.message;
  EXPECT_NE(v.output_tail.find("called with rows 7 cols 33"), std::string::npos) << v.output_tail;
  EXPECT_NE(v.feedback.find("libblas"), std::string::npos) << v.feedback;
  for (const char* leak : {"called with", "rows 7", "cols 33", "cols 1000", "M=7", "N=33"})
    EXPECT_EQ(v.feedback.find(leak), std::string::npos) << "'" << leak << "' in the feedback:\n" << v.feedback;
}

// HOLE 4: limits.processes (RLIMIT_NPROC, set by the runner) does not bind
// root: the kernel exempts the root user from RLIMIT_NPROC whatever its
// capabilities, and the policy allows any number of threads
// (backends/sandbox/src/seccomp.cpp: clone with CLONE_THREAD). thread_storm
// starts 3000 threads under a limit of 256 (a candidate with 4096 MiB of
// address space could start ~200000 at 20 KiB each: more than pid_max,
// 32768 on the development VM, i.e. every process number of the machine,
// while the judgement lasts). Run as root only here; a non-root engine is
// bound by the limit.
TEST(RedTeam, ThreadsAreBoundByTheProcessLimit) {
  auto task = small_task();
  kevo::cpu::CpuBackend backend(small_options(20));
  backend.prepare(*task);
  const kevo::Verdict v = judge_one(backend, task, kAttacks / "thread_storm.cpp");
  std::printf("%s\n", v.output_tail.c_str());
  EXPECT_EQ(v.output_tail.find("threads started 3000"), std::string::npos)
      << "3000 threads under limits.processes = 256 (uid " << ::getuid() << ")";
}
