// CpuBackend: config parsing, the compile cache, the checks prepare() makes
// on a task (reference self-check, null candidates, seed) and scheduling.
#include "kevo/core/error.hpp"
#include "kevo/core/task.hpp"
#include "kevo/cpu/cpu_backend.hpp"
#include "kevo/sandbox/isolation.hpp"
#include "kevo/sandbox/scratch_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;
using kevo::Status;

namespace {

const fs::path kTask = fs::path(KEVO_ADVERSARIAL_DIR) / "task";
const fs::path kCandidates = fs::path(KEVO_ADVERSARIAL_DIR) / "candidates";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

kevo::cpu::CpuOptions options(nlohmann::json extra = nlohmann::json::object()) {
  nlohmann::json cfg = {
      {"cache_dir", ""},
      {"worker", KEVO_CPU_WORKER},
      {"limits", {{"wall_seconds", 10}, {"memory_mb", 1024}}},
      {"timing", {{"warmup", 0}, {"min_repeats", 2}, {"max_repeats", 3}, {"budget_seconds", 0.01}, {"flush_kb", 64}}},
  };
  cfg.update(extra);
  kevo::StrictObject obj(cfg, "test.json", "/backend/cpu");
  return kevo::cpu::parse_cpu_options(obj);
}

// A copy of the adversarial task in a scratch dir, to be edited.
struct TaskCopy {
  kevo::sandbox::ScratchDir dir = kevo::sandbox::ScratchDir::create(fs::temp_directory_path(), "kevo-test-task");
  TaskCopy() {
    for (const char* f : {"task.json", "reference.cpp", "seed.cpp"}) fs::copy_file(kTask / f, dir.path() / f);
  }
  nlohmann::json manifest() const { return nlohmann::json::parse(read(dir.path() / "task.json")); }
  void set_manifest(const nlohmann::json& j) const { write(dir.path() / "task.json", j.dump(2)); }
  std::shared_ptr<kevo::Task> load() const { return std::make_shared<kevo::Task>(kevo::load_task(dir.path())); }
};


}  // namespace

// --- options ----------------------------------------------------------------

TEST(CpuOptions, DefaultsAreResolved) {
  nlohmann::json cfg = nlohmann::json::object();
  kevo::StrictObject obj(cfg, "c.json", "/backend/cpu");
  auto o = kevo::cpu::parse_cpu_options(obj);
  EXPECT_EQ(o.compiler, "c++");
  EXPECT_GE(o.compile_jobs, 1);
  EXPECT_EQ(o.eval_jobs, 1);
  EXPECT_GE(o.trials, 3);
  EXPECT_TRUE(o.seccomp);
  EXPECT_GT(o.timing.flush_kb, 0);
  EXPECT_EQ(o.cache_dir, kevo::cpu::default_cache_dir());
  auto j = kevo::cpu::to_json(o);
  EXPECT_EQ(j["limits"]["memory_mb"], 4096);
  EXPECT_EQ(j["sandbox"]["seccomp"], true);
  // The effective config reads back as the same options.
  kevo::StrictObject again(j, "effective.json", "/backend/cpu");
  auto o2 = kevo::cpu::parse_cpu_options(again);
  EXPECT_EQ(kevo::cpu::to_json(o2), j);
}

TEST(CpuOptions, UnknownKeysAreRejectedWithTheirPointer) {
  auto expect_bad = [](nlohmann::json cfg, const std::string& key) {
    kevo::StrictObject obj(cfg, "run.json", "/backend/cpu");
    try {
      kevo::cpu::parse_cpu_options(obj);
      ADD_FAILURE() << "accepted " << cfg.dump();
    } catch (const kevo::InputError& e) {
      EXPECT_EQ(e.file(), "run.json");
      EXPECT_EQ(e.key(), key) << e.what();
    }
  };
  expect_bad({{"compile_job", 2}}, "/backend/cpu/compile_job");
  expect_bad({{"limits", {{"wall_second", 2}}}}, "/backend/cpu/limits/wall_second");
  expect_bad({{"timing", {{"flush", 2}}}}, "/backend/cpu/timing/flush");
  expect_bad({{"sandbox", {{"secomp", false}}}}, "/backend/cpu/sandbox/secomp");
  expect_bad({{"correctness", {{"trials", 2}}}}, "/backend/cpu/correctness/trials");   // at least 3
  expect_bad({{"eval_jobs", 0}}, "/backend/cpu/eval_jobs");
  expect_bad({{"compiler", "kevo-no-such-compiler"}}, "/backend/cpu/compiler");
  expect_bad({{"timing", {{"min_repeats", 10}, {"max_repeats", 5}}}}, "/backend/cpu/timing/max_repeats");
}

TEST(CpuBackend, MissingWorkerIsAClearFailure) {
  auto o = options();
  o.worker = "/nonexistent/kevo-cpu-worker";
  try {
    kevo::cpu::CpuBackend b(o);
    ADD_FAILURE();
  } catch (const kevo::Failure& e) {
    EXPECT_NE(std::string(e.what()).find("kevo-cpu-worker"), std::string::npos);
  }
}

// --- compile cache ------------------------------------------------------------

TEST(CpuBackend, CompileCacheHitAndMiss) {
  kevo::sandbox::ScratchDir cache = kevo::sandbox::ScratchDir::create(fs::temp_directory_path(), "kevo-test-cache");
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  const std::string correct = read(kCandidates / "correct.cpp");
  {
    kevo::cpu::CpuBackend b(options({{"cache_dir", cache.path().string()}}));
    b.prepare(*task);
    const auto s0 = b.stats();
    kevo::Verdict v = b.evaluate(task, correct, 1);
    EXPECT_EQ(v.status, Status::correct) << v.message;
    EXPECT_FALSE(v.compile_cached);
    EXPECT_GT(v.compile_seconds, 0.0);
    EXPECT_EQ(b.stats().compiles, s0.compiles + 1);
    // A different source is a miss.
    kevo::Verdict w = b.evaluate(task, correct + "\n// another comment\n", 1);
    EXPECT_FALSE(w.compile_cached);
    EXPECT_EQ(b.stats().compiles, s0.compiles + 2);
  }
  // A new backend (a later run) finds the object in the persistent cache.
  kevo::cpu::CpuBackend b2(options({{"cache_dir", cache.path().string()}}));
  b2.prepare(*task);
  EXPECT_EQ(b2.stats().compiles, 0u) << "reference and seed come from the cache too";
  kevo::Verdict v = b2.evaluate(task, correct, 2);
  EXPECT_EQ(v.status, Status::correct) << v.message;
  EXPECT_TRUE(v.compile_cached);
  EXPECT_EQ(b2.stats().compiles, 0u);
  // Other flags: another key.
  kevo::cpu::CpuBackend b3(options({{"cache_dir", cache.path().string()}, {"flags", {"-O1"}}}));
  b3.prepare(*task);
  EXPECT_GT(b3.stats().compiles, 0u);
}

TEST(CpuBackend, IdenticalSourcesInFlightCompileOnce) {
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options());
  b.prepare(*task);
  const auto s0 = b.stats();
  const std::string src = read(kCandidates / "correct.cpp") + "// twin\n";
  for (std::uint64_t id = 1; id <= 3; ++id) b.submit({id, task, src, id});
  std::set<std::uint64_t> back;
  int cached = 0;
  while (back.size() < 3)
    for (auto& r : b.poll(std::chrono::milliseconds(200))) {
      EXPECT_EQ(r.verdict.status, Status::correct);
      cached += r.verdict.compile_cached ? 1 : 0;
      back.insert(r.id);
    }
  EXPECT_EQ(b.stats().compiles, s0.compiles + 1);
  EXPECT_EQ(cached, 2);
}

// --- prepare(): the task's own checks --------------------------------------------

TEST(CpuBackend, LooseToleranceIsRejectedByANullCandidate) {
  TaskCopy t;
  auto m = t.manifest();
  m["tolerance"] = {{"atol", 1e3}, {"rtol", 1e-4}, {"rel_l2", 1e3}};
  t.set_manifest(m);
  auto task = t.load();
  kevo::cpu::CpuBackend b(options());
  try {
    b.prepare(*task);
    ADD_FAILURE() << "a task with a loose tolerance was accepted";
  } catch (const kevo::InputError& e) {
    EXPECT_EQ(e.file(), task->manifest_path.string());
    EXPECT_EQ(e.key(), "/tolerance");
    EXPECT_NE(e.expected().find("null candidate 'zeros'"), std::string::npos) << e.what();
  }
}

TEST(CpuBackend, ToleranceThatLetsTheOtherSeedNullPassIsRejected) {
  // Outputs that do not depend on the inputs: only the other-seed null
  // candidate (and the copy one, which writes the constant input) pass.
  TaskCopy t;
  auto m = t.manifest();
  m["args"][0]["distribution"] = {{"kind", "constant"}, {"value", 1.0}};
  t.set_manifest(m);
  auto task = t.load();
  kevo::cpu::CpuBackend b(options());
  try {
    b.prepare(*task);
    ADD_FAILURE();
  } catch (const kevo::InputError& e) {
    EXPECT_EQ(e.key(), "/tolerance");
    EXPECT_NE(e.expected().find("other_seed"), std::string::npos) << e.what();
  }
}

TEST(CpuBackend, ReferenceThatModifiesItsInputIsRejected) {
  TaskCopy t;
  write(t.dir.path() / "reference.cpp", R"(
#include <cstdint>
extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s;
  }
  const_cast<float*>(A)[0] = 1.0f;
}
)");
  auto task = t.load();
  kevo::cpu::CpuBackend b(options());
  try {
    b.prepare(*task);
    ADD_FAILURE();
  } catch (const kevo::InputError& e) {
    EXPECT_EQ(e.key(), "/reference");
    EXPECT_NE(e.expected().find("passes its own checks"), std::string::npos);
    EXPECT_NE(e.expected().find("modified its input"), std::string::npos) << e.what();
  }
}

TEST(CpuBackend, NondeterministicReferenceIsRejected) {
  TaskCopy t;
  write(t.dir.path() / "reference.cpp", R"(
#include <cstdint>
extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  static int calls = 0;
  ++calls;
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = s + (calls % 2 ? 0.0f : 0.5f);
  }
}
)");
  auto task = t.load();
  kevo::cpu::CpuBackend b(options());
  try {
    b.prepare(*task);
    ADD_FAILURE();
  } catch (const kevo::InputError& e) {
    EXPECT_EQ(e.key(), "/reference");
    EXPECT_NE(e.expected().find("two runs"), std::string::npos) << e.what();
  }
}

TEST(CpuBackend, ReferenceThatDoesNotCompileIsRejected) {
  TaskCopy t;
  write(t.dir.path() / "reference.cpp", "extern \"C\" void rowsum( this is not C++\n");
  auto task = t.load();
  kevo::cpu::CpuBackend b(options());
  try {
    b.prepare(*task);
    ADD_FAILURE();
  } catch (const kevo::InputError& e) {
    EXPECT_EQ(e.key(), "/reference");
    EXPECT_NE(e.expected().find("compile"), std::string::npos) << e.what();
  }
}

TEST(CpuBackend, WrongSeedIsRejected) {
  TaskCopy t;
  write(t.dir.path() / "seed.cpp", read(kCandidates / "unwritten.cpp"));
  auto task = t.load();
  kevo::cpu::CpuBackend b(options());
  try {
    b.prepare(*task);
    ADD_FAILURE();
  } catch (const kevo::InputError& e) {
    EXPECT_EQ(e.key(), "/seed");
    EXPECT_NE(e.expected().find("wrong_answer"), std::string::npos) << e.what();
  }
}

// --- verdict details ------------------------------------------------------------

TEST(CpuBackend, HiddenShapesStayOutOfTheFeedback) {
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options());
  b.prepare(*task);
  // Wrong on the first hidden shape (7x33), right everywhere else (the
  // drawn shapes come before the hidden ones and must pass).
  const std::string src = R"(
#include <cstdint>
extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = M == 7 && N == 33 ? s + 1.0f : s;
  }
}
)";
  kevo::Verdict v = b.evaluate(task, src, 3);
  ASSERT_EQ(v.status, Status::wrong_answer) << v.message;
  ASSERT_TRUE(v.mismatch.has_value());
  EXPECT_NE(v.mismatch->shape.find("hidden"), std::string::npos);
  EXPECT_NE(v.message.find("M=7,N=33"), std::string::npos) << v.message;   // people see it
  EXPECT_EQ(v.feedback.find("M=7"), std::string::npos) << v.feedback;      // prompts do not
  EXPECT_NE(v.feedback.find("hidden test shape"), std::string::npos) << v.feedback;
  EXPECT_NE(v.feedback.find("Wrong answer"), std::string::npos);
}

// A rowsum scaled by `scale`, plus `offset` with alternating sign.
std::string scaled_rowsum(const char* scale, const char* offset) {
  return std::string(R"(
#include <cstdint>
extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = )") + scale + "f * s + (i % 2 ? 1.0f : -1.0f) * " + offset + "f;\n  }\n}\n";
}

TEST(CpuBackend, RelativeL2HasAnAbsoluteFloorForNearZeroOutputs) {
  // Outputs of RMS ~1e-5, below atol 1e-4: the relative L2 error is taken
  // against the floor atol * sqrt(n). Error 5e-8 per element is 5e-4 of the
  // floor (passes rel_l2 1e-3) but 5e-3 of ||want|| (failed before the floor).
  TaskCopy t;
  const std::string ref = scaled_rowsum("1e-6", "0.0");
  write(t.dir.path() / "reference.cpp", ref);
  write(t.dir.path() / "seed.cpp", ref);
  auto m = t.manifest();
  m["tolerance"] = {{"atol", 1e-4}, {"rtol", 1e-4}, {"rel_l2", 1e-3}};
  t.set_manifest(m);
  auto task = t.load();
  kevo::cpu::CpuBackend b(options());
  b.prepare(*task);   // the null candidates (zeros among them) still fail: 0.09 of the floor

  kevo::Verdict near = b.evaluate(task, scaled_rowsum("1e-6", "5e-8"), 5);
  EXPECT_EQ(near.status, Status::correct) << near.message;
  EXPECT_GT(near.rel_l2_error, 1e-4);
  EXPECT_LT(near.rel_l2_error, 1e-3);

  // 1.5x the answer: every element within atol, but the RMS error is ~5% of
  // the floor. The L2 check still rejects it.
  kevo::Verdict wrong = b.evaluate(task, scaled_rowsum("1.5e-6", "0.0"), 5);
  EXPECT_EQ(wrong.status, Status::wrong_answer) << wrong.message;
  EXPECT_NE(wrong.message.find("relative L2 error"), std::string::npos) << wrong.message;
  EXPECT_GT(wrong.rel_l2_error, 1e-2);
}

TEST(CpuBackend, VerdictJsonRoundTripsAndOutputIsClean) {
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options());
  b.prepare(*task);
  // Prints invalid UTF-8 and control bytes, then crashes.
  const std::string src = R"(
#include <cstdint>
#include <cstdio>
#include <cstdlib>
extern "C" void rowsum(const float*, float*, int32_t, int32_t) {
  std::fputs("bad \xff\xfe bytes \x01 here\n", stderr);
  std::fflush(stderr);
  std::abort();
}
)";
  kevo::Verdict v = b.evaluate(task, src, 3);
  EXPECT_EQ(v.status, Status::runtime_error);
  EXPECT_EQ(v.signal, 6);
  // Each invalid byte becomes U+FFFD, a control byte its Control Picture
  // (kevo::sanitize_utf8, kevo/core/text.hpp).
  EXPECT_NE(v.output_tail.find("bad \xEF\xBF\xBD\xEF\xBF\xBD bytes \xE2\x90\x81 here"), std::string::npos) << v.output_tail;
  const std::string text = kevo::to_json(v).dump();   // throws on invalid UTF-8
  kevo::Verdict back = kevo::verdict_from_json(nlohmann::json::parse(text));
  EXPECT_EQ(back.status, v.status);
  EXPECT_EQ(back.message, v.message);
}

TEST(CpuBackend, CompileErrorsCarryTheLogInFeedback) {
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options());
  b.prepare(*task);
  kevo::Verdict v = b.evaluate(task, read(kCandidates / "compile_error.cpp"), 1);
  EXPECT_EQ(v.status, Status::compile_error);
  EXPECT_EQ(v.stage, kevo::Stage::compile);
  EXPECT_NE(v.feedback.find("candidate.cpp:"), std::string::npos) << v.feedback;
  EXPECT_LE(v.compile_log.size(), 17u * 1024);
}

// --- scheduling -----------------------------------------------------------------

TEST(CpuBackend, WantedCancelAndNeeds) {
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options({{"compile_jobs", 2}, {"eval_jobs", 1}}));
  EXPECT_EQ(b.needs().compile_slots, 2);
  EXPECT_EQ(b.needs().eval_slots, 1);
  EXPECT_FALSE(b.needs().accelerator);
  b.prepare(*task);
  EXPECT_EQ(b.wanted(), 5u);
  const std::string sleeper = read(kCandidates / "sleep_forever.cpp");
  for (std::uint64_t id = 1; id <= 3; ++id) b.submit({id, task, sleeper + "// " + std::to_string(id) + "\n", id});
  EXPECT_EQ(b.wanted(), 2u);
  EXPECT_THROW(b.submit({1, task, sleeper, 1}), kevo::Failure);   // id in flight
  b.poll(std::chrono::milliseconds(1500));
  auto dropped = b.cancel_all();
  EXPECT_EQ(dropped.size(), 3u);
  EXPECT_EQ(b.in_flight(), 0u);
  EXPECT_EQ(b.wanted(), 5u);
  EXPECT_TRUE(b.poll(std::chrono::milliseconds(10)).empty());
  // Still usable.
  EXPECT_EQ(b.evaluate(task, read(kCandidates / "correct.cpp"), 5).status, Status::correct);
}

TEST(CpuBackend, SeccompOffStillJudges) {
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options({{"sandbox", {{"seccomp", false}}}}));
  b.prepare(*task);
  EXPECT_EQ(b.evaluate(task, read(kCandidates / "correct.cpp"), 5).status, Status::correct);
}

// The flavour's fixed worker environment (how the CUDA backend sets
// CUDA_DEVICE_MAX_CONNECTIONS) reaches the worker that runs the candidate;
// the engine's own environment does not, unless named.
TEST(CpuBackend, FlavourEnvironmentReachesTheWorker) {
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  // Correct only where the worker has KEVO_TEST_WORKER_ENV=set, and
  // aborts where it sees KEVO_TEST_ENGINE_ONLY.
  const std::string src = R"(
#include <cstdint>
#include <cstdlib>
#include <cstring>
extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  if (std::getenv("KEVO_TEST_ENGINE_ONLY")) std::abort();
  const char* e = std::getenv("KEVO_TEST_WORKER_ENV");
  const bool set = e && std::strcmp(e, "set") == 0;
  for (int32_t i = 0; i < M; ++i) {
    float s = 0.0f;
    for (int32_t j = 0; j < N; ++j) s += A[static_cast<int64_t>(i) * N + j];
    out[i] = set ? s : s + 1.0f;
  }
}
)";
  ::setenv("KEVO_TEST_ENGINE_ONLY", "1", 1);
  kevo::cpu::CpuOptions with = options();
  with.flavour.worker_env.push_back("KEVO_TEST_WORKER_ENV=set");
  kevo::cpu::CpuBackend b(with);
  b.prepare(*task);
  const kevo::Verdict v = b.evaluate(task, src, 5);
  kevo::cpu::CpuBackend plain(options());
  plain.prepare(*task);
  const kevo::Verdict w = plain.evaluate(task, src, 5);
  ::unsetenv("KEVO_TEST_ENGINE_ONLY");
  EXPECT_EQ(v.status, Status::correct) << v.message;
  EXPECT_EQ(w.status, Status::wrong_answer) << w.message;
}

TEST(CpuBackend, TimesUnderTheRooflineFloorAreErrors) {
  // With peaks this small the honest candidate's time is far under the
  // floor (flops / peak, bytes / bandwidth): an error, never a speedup.
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options({{"roofline", {{"peak_gflops", 1e-6}, {"peak_gbps", 1e-6}}}}));
  b.prepare(*task);
  const kevo::Verdict v = b.evaluate(task, read(kCandidates / "correct.cpp"), 3);
  EXPECT_EQ(v.status, Status::runtime_error) << v.message;
  EXPECT_NE(v.message.find("roofline floor"), std::string::npos) << v.message;
  EXPECT_EQ(v.stage, kevo::Stage::timing);
}

TEST(CpuBackend, TheEstimatedPeaksLeaveHonestKernelsAlone) {
  // Unset peaks are estimated for this machine, generously: the same
  // candidate is correct with them, and the effective config shows them.
  const kevo::cpu::CpuOptions o = options();
  EXPECT_GT(o.roofline.peak_gflops, 1.0);
  EXPECT_GT(o.roofline.peak_gbps, 1.0);
  EXPECT_EQ(kevo::cpu::to_json(o).at("roofline").at("peak_gbps"), o.roofline.peak_gbps);
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(o);
  b.prepare(*task);
  const kevo::Verdict v = b.evaluate(task, read(kCandidates / "correct.cpp"), 3);
  EXPECT_EQ(v.status, Status::correct) << v.message;
}

TEST(CpuBackend, ReportsTheGuaranteesOfItsSandbox) {
  // What the candidates' kernel hosts got, from the last judgement: here
  // (root or a user with namespaces) every guarantee; the report names
  // any that is missing, never silently.
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options());
  EXPECT_TRUE(b.guarantees().is_null());
  b.prepare(*task);
  const nlohmann::json g = b.guarantees();
  ASSERT_TRUE(g.is_object()) << g.dump();
  const nlohmann::json& iso = g.at("isolation");
  EXPECT_TRUE(iso.at("seccomp").get<bool>()) << g.dump();
  EXPECT_TRUE(iso.at("caps_dropped").get<bool>()) << g.dump();
  const bool all = iso.at("user_ns").get<bool>() && iso.at("pid_ns").get<bool>() && iso.at("private_proc").get<bool>() &&
                   iso.at("private_root").get<bool>() && iso.at("unprivileged").get<bool>() &&
                   iso.at("read_only_fs").get<bool>();
  EXPECT_EQ(g.at("missing").empty(), all) << g.dump();
  std::printf("sandbox guarantees here: %s\n", g.dump().c_str());
}

TEST(CpuBackend, WithoutNamespacesTheEngineStaysOutOfReachAndTheReportSaysWhatIsMissing) {
  // sandbox.namespaces false stands for a machine without user namespaces:
  // the host sees the machine's /proc, but the engine (non-dumpable) keeps
  // its environment, and the report lists the missing guarantees.
  ::setenv("KEVO_TEST_SECRET", "sk-kevo-fallback-7d31", 1);
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options({{"sandbox", {{"namespaces", false}}}}));
  b.prepare(*task);
  const kevo::Verdict v = b.evaluate(task, read(kCandidates / "read_secrets.cpp"), 3);
  EXPECT_EQ(v.status, Status::correct) << v.message;
  EXPECT_EQ(v.output_tail.find("sk-kevo-fallback-7d31"), std::string::npos) << v.output_tail;
  const nlohmann::json g = b.guarantees();
  ASSERT_TRUE(g.is_object());
  EXPECT_FALSE(g.at("isolation").at("pid_ns").get<bool>());
  bool names_pid = false;
  for (const auto& m : g.at("missing")) names_pid = names_pid || m.get<std::string>().find("PID namespace") != std::string::npos;
  EXPECT_TRUE(names_pid) << g.dump();
  EXPECT_TRUE(g.at("isolation").at("seccomp").get<bool>());
  EXPECT_TRUE(g.at("isolation").at("caps_dropped").get<bool>());
}

TEST(CpuBackend, TheCompilerReadsNoFileOfTheUsers) {
  // A source that includes a file of the user's (a key, the task's hidden
  // shapes): before, the compiler printed its first line in the compile
  // log, which reaches the feedback, the next prompt and the lineage. Its
  // reads are confined to the system's trees and what its command names.
  std::string why;
  const int probe = kevo::sandbox::make_ruleset({"/tmp"}, {"/usr"}, why);
  if (probe < 0) GTEST_SKIP() << "no Landlock on this kernel: " << why;
  ::close(probe);
  const kevo::sandbox::ScratchDir dir = kevo::sandbox::ScratchDir::create(fs::temp_directory_path(), "kevo-secret");
  const fs::path secret = dir.path() / "api-key.txt";
  std::ofstream(secret) << "sk-kevo-include-5e1f0c\n";
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options(nlohmann::json::object()));
  b.prepare(*task);
  const std::string source = "#include \"" + secret.string() + "\"\n" + read(kCandidates / "correct.cpp");
  const kevo::Verdict v = b.evaluate(task, source, 3);
  EXPECT_EQ(v.status, Status::compile_error) << v.message;
  for (const std::string* text : {&v.message, &v.compile_log, &v.feedback, &v.output_tail})
    EXPECT_EQ(text->find("sk-kevo-include"), std::string::npos) << *text;
  EXPECT_NE(v.compile_log.find("api-key.txt"), std::string::npos) << v.compile_log;
  EXPECT_TRUE(b.guarantees().at("compiler_reads_confined").get<bool>());
}

TEST(CpuBackend, TheCompilerWritesItsBuildAndNothingElse) {
  // A compiler that also tries to write beside the build (as a hostile
  // source cannot make gcc do, but a toolchain plugin or wrapper could):
  // Landlock lets it write its scratch directory only.
  std::string why;
  const int probe = kevo::sandbox::make_write_ruleset({"/tmp"}, why);
  if (probe < 0) GTEST_SKIP() << "no Landlock on this kernel: " << why;
  ::close(probe);
  const kevo::sandbox::ScratchDir dir = kevo::sandbox::ScratchDir::create(fs::temp_directory_path(), "kevo-confine");
  const fs::path escape = dir.path() / "escaped.txt";
  const fs::path wrapper = dir.path() / "cxx-wrapper";
  std::ofstream(wrapper) << "#!/bin/sh\n"
                         << "case \"$*\" in *-shared*) echo escaped > '" << escape.string() << "' ;; esac\n"
                         << "exec c++ \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  auto task = std::make_shared<kevo::Task>(kevo::load_task(kTask));
  kevo::cpu::CpuBackend b(options({{"compiler", wrapper.string()}}));
  b.prepare(*task);
  const kevo::Verdict v = b.evaluate(task, read(kCandidates / "correct.cpp"), 3);
  EXPECT_EQ(v.status, Status::correct) << v.message;
  EXPECT_FALSE(fs::exists(escape)) << "the compiler wrote outside its build directory";
  EXPECT_TRUE(b.guarantees().at("compiler_writes_confined").get<bool>());
}
