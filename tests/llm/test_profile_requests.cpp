// Profiles on request (docs/cuda.md#profiler-feedback): an operator's request
// travels Proposal -> Candidate -> EvalRequest -> the backend's job -> the
// worker's request ("profile": true), where a backend that profiles (the
// CUDA flavour: profile_on_request) honours it; the CPU backend ignores it.
// The worker here is the real kevo-cpu-worker behind a small shell script
// that keeps a copy of every request it is sent.
#include "fake_server.hpp"

#include "kevo/app/plugins.hpp"
#include "kevo/core/task.hpp"
#include "kevo/cpu/cpu_backend.hpp"
#include "kevo/engine/config.hpp"
#include "kevo/engine/island.hpp"
#include "kevo/engine/run.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kevo {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = KEVO_SOURCE_DIR;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kevo-profile-req-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// A worker that saves its request (fd 3) under `log_dir`, then runs the real
// worker on the saved copy.
fs::path recording_worker(const fs::path& dir, const fs::path& log_dir) {
  fs::create_directories(log_dir);
  const fs::path script = dir / "recording-worker.sh";
  std::ofstream(script) << "#!/bin/sh\n"
                        << "log='" << (log_dir / "request-").string() << "'$$.json\n"
                        << "cat <&3 > \"$log\"\n"
                        << "exec '" << KEVO_CPU_WORKER << "' \"$@\" 3< \"$log\"\n";
  ::chmod(script.c_str(), 0755);
  return script;
}

// The timed judge-mode requests the worker was sent, by seed.
std::map<std::uint64_t, json> timed_requests(const fs::path& log_dir) {
  std::map<std::uint64_t, json> out;
  for (const auto& e : fs::directory_iterator(log_dir)) {
    std::ifstream in(e.path());
    const json r = json::parse(in, nullptr, false);
    // Seeds travel as strings (kevo/native/protocol.hpp); what the flavour
    // reads (the profile flag) under "flavour".
    if (r.is_object() && r.value("mode", "") == "judge" && r.value("timing", false))
      out[std::stoull(r.at("seed").get<std::string>())] = r.value("flavour", json::object());
  }
  return out;
}

cpu::CpuOptions recording_options(const fs::path& worker) {
  cpu::CpuOptions o;
  o.worker = worker.string();
  o.cache_dir = "";
  o.compile_jobs = 2;
  o.timing.budget_seconds = 0.02;
  o.timing.min_repeats = 3;
  return o;
}

std::vector<EvalResult> drain(Backend& b, std::size_t n) {
  std::vector<EvalResult> out;
  const auto t0 = std::chrono::steady_clock::now();
  while (out.size() < n && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    for (auto& r : b.poll(std::chrono::milliseconds(100))) out.push_back(std::move(r));
  EXPECT_EQ(out.size(), n);
  return out;
}

TEST(ProfileRequests, ReachTheWorkerWhereTheBackendProfiles) {
  TempDir dir;
  const fs::path logs = dir.path() / "requests";
  const fs::path worker = recording_worker(dir.path(), logs);
  auto task = std::make_shared<const Task>(load_task(kSource / "configs/tasks/cpu/reduce_sum"));

  // A backend that profiles on request (what the CUDA backend sets where ncu
  // is found): the asked-for candidate's worker is told to profile, the other not.
  cpu::CpuOptions o = recording_options(worker);
  o.flavour.profile_on_request = true;
  cpu::CpuBackend profiling(o);
  profiling.prepare(*task);
  profiling.submit(EvalRequest{1, task, task->seed_source, 11, "test: asked for one"});
  profiling.submit(EvalRequest{2, task, task->seed_source + "\n// unasked\n", 12, ""});
  for (const auto& r : drain(profiling, 2)) EXPECT_EQ(r.verdict.status, Status::correct) << r.verdict.message;
  auto sent = timed_requests(logs);
  ASSERT_EQ(sent.count(11), 1u);
  ASSERT_EQ(sent.count(12), 1u);
  EXPECT_EQ(sent[11].value("profile", false), true) << sent[11].dump();
  EXPECT_EQ(sent[12].value("profile", true), false) << sent[12].dump();

  // The CPU backend (no profiler) ignores requests: its requests are as before.
  fs::remove_all(logs);
  fs::create_directories(logs);
  cpu::CpuBackend plain(recording_options(worker));
  plain.prepare(*task);
  plain.submit(EvalRequest{3, task, task->seed_source, 13, "test: asked for one"});
  (void)drain(plain, 1);
  sent = timed_requests(logs);
  ASSERT_EQ(sent.count(13), 1u);
  EXPECT_FALSE(sent[13].contains("profile")) << sent[13].dump();
}

class RowSink final : public engine::LineageSink {
 public:
  void record(const Candidate& c) override { rows.push_back(c); }
  std::vector<Candidate> rows;
};

struct IslandRun {
  std::vector<Candidate> rows;
  std::map<std::uint64_t, json> timed;   // by eval seed
};

// One island on the CPU reduce_sum task with `op` as its only operator,
// through the fake LLM server, judged by a backend that profiles on request.
IslandRun run_island(const std::string& op, const std::string& url) {
  TempDir dir;
  const fs::path logs = dir.path() / "requests";
  const fs::path worker = recording_worker(dir.path(), logs);
  const json doc = {
      {"name", "profreq"},
      {"seed", 5},
      {"tasks", {(kSource / "configs/tasks/cpu/reduce_sum").string()}},
      {"budget", {{"evaluations_per_task", 5}}},
      {"island", {{"population", 4}, {"elites", 1}, {"in_flight", 2}, {"ordering", "deterministic"}}},
      {"operators", {{{"type", op}, {"weight", 1.0}}}},
      {"llm",
       {{"models", {{{"name", "fake"}, {"provider", "openai-compatible"}, {"base_url", url}, {"model", "fake-coder"},
                     {"max_tokens", 256}}}},
        {"client", {{"timeout_s", 5.0}, {"connect_timeout_s", 1.0}, {"max_retries", 1}}},
        {"prompts_dir", (kSource / "configs/prompts").string()},
        {"knowledge_dir", (kSource / "configs/knowledge").string()},
        {"probe", false},
        {"hardware", "a test CPU"}}},
      {"backend", {{"type", "cpu"}, {"cpu", {{"cache_dir", ""}}}}},
      {"progress", {{"mode", "off"}}}};
  auto config = engine::parse_config(doc, (dir.path() / "conf.json").string(), app::builtin_plugins({"cpu"}));
  cpu::CpuOptions o = recording_options(worker);
  o.flavour.profile_on_request = true;
  config.backend = std::make_unique<cpu::CpuBackend>(o);
  auto tasks = engine::load_tasks(config);
  RowSink sink;
  engine::IslandOptions opts;
  opts.seed = config.seed;
  opts.budget = config.budget;
  opts.island = config.island;
  engine::Island island(opts, tasks, *config.backend, config.operators, sink);
  std::atomic<int> stop{0};
  island.run(stop, {});
  return {sink.rows, timed_requests(logs)};
}

// With the analyst, its children (whose parents have no profile: the CPU
// worker makes none) carry a request to the worker, and the lineage's
// operator note says why; with a plain rewrite instead, no request is made.
TEST(ProfileRequests, TheAnalystsChildrenCarryThemToTheWorker) {
  test::FakeServer s(json{{"default", {{"kind", "auto"}}}});
  ASSERT_TRUE(s.up());
  const IslandRun with = run_island("llm_analyst", s.url());
  int asked = 0;
  for (const auto& c : with.rows) {
    if (c.op != "llm_analyst" || !with.timed.count(c.eval_seed)) continue;
    const json& r = with.timed.at(c.eval_seed);
    EXPECT_EQ(r.value("profile", false), true) << c.id << ": " << r.dump();
    EXPECT_NE(c.op_note.find("profile requested (llm_analyst: parent "), std::string::npos) << c.op_note;
    ++asked;
  }
  EXPECT_GE(asked, 1) << "no analyst child reached the worker";

  const IslandRun without = run_island("llm_rewrite", s.url());
  int timed = 0;
  for (const auto& [seed, r] : without.timed) {
    EXPECT_EQ(r.value("profile", true), false) << r.dump();
    ++timed;
  }
  EXPECT_GE(timed, 2) << "the rewrite run judged too little to show anything";
}

}  // namespace
}  // namespace kevo
