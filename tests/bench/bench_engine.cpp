// Engine overhead per candidate: the island loop with the null backend (no
// compile, instant verdict) and the HDF5 lineage on, so what is measured is
// kevo's own cost: proposal, operator, hashing/dedup, selection, commit and
// logging. Target (issue 2): at most 100 us per candidate, i.e. at least
// 10,000 candidates/s on one rank.
//
//   kevo_bench_engine [--candidates N] [--repeats R]
#include "kevo/app/plugins.hpp"
#include "kevo/engine/config.hpp"
#include "kevo/engine/island.hpp"
#include "kevo/engine/lineage_sink.hpp"
#include "kevo/engine/run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace kevo;

namespace {

// A task with a large space (10^6 points) and a ~1 KB body, so that
// candidates are unique and realistic in size.
fs::path make_task(const fs::path& dir) {
  fs::create_directories(dir);
  nlohmann::json params = nlohmann::json::array();
  for (int p = 0; p < 6; ++p) {
    nlohmann::json values = nlohmann::json::array();
    for (int v = 0; v < 10; ++v) values.push_back(v + 1);
    params.push_back({{"name", fmt::format("P{}", p)}, {"values", values}});
  }
  nlohmann::json seed_point = nlohmann::json::object();
  for (int p = 0; p < 6; ++p) seed_point[fmt::format("P{}", p)] = 1;
  nlohmann::json task = {
      {"name", "bench"},
      {"description", "synthetic task for the engine overhead benchmark"},
      {"backend", "null"},
      {"function", "k"},
      {"args", {{{"name", "x"}, {"dtype", "float32"}, {"role", "in"}, {"shape", {"N"}}},
                {{"name", "y"}, {"dtype", "float32"}, {"role", "out"}, {"shape", {"N"}}},
                {{"name", "n"}, {"dtype", "int32"}, {"role", "scalar"}, {"value", "N"}}}},
      {"shapes", {{"visible", {{{"N", 1024}}}}, {"hidden", {{{"N", 7}}}}}},
      {"reference", "reference.cpp"},
      {"seed", "seed.cpp"},
      {"search_space", {{"params", params}, {"restrictions", {"P0 * P1 <= 16384"}}, {"seed_point", seed_point}}},
  };
  std::ofstream(dir / "task.json") << task.dump(2);
  std::ofstream(dir / "reference.cpp") << "#include <cstdint>\nextern \"C\" void k(const float* x, float* y, int32_t n) "
                                          "{ for (int32_t i = 0; i < n; ++i) y[i] = x[i]; }\n";
  std::string body = "#include <cstdint>\n// a body of realistic size\n";
  for (int i = 0; i < 24; ++i) body += fmt::format("static inline float helper{0}(float v) {{ return v * {0}.0f + P{1}; }}\n", i, i % 6);
  body += "extern \"C\" void k(const float* x, float* y, int32_t n) { for (int32_t i = 0; i < n; ++i) y[i] = x[i]; }\n";
  std::ofstream(dir / "seed.cpp") << "// kevo:params begin\n#define P0 1\n#define P1 1\n#define P2 1\n#define P3 1\n#define P4 1\n#define P5 1\n// kevo:params end\n" << body;
  return dir;
}

engine::Plugins plugins() { return app::builtin_plugins({"null"}); }

struct CountingSink final : engine::LineageSink {
  std::int64_t n = 0;
  void record(const Candidate&) override { ++n; }
};

double run_once(const fs::path& task_dir, const fs::path& out, std::int64_t candidates, bool hdf5,
                std::int64_t& committed, std::int64_t& judged) {
  nlohmann::json doc = {
      {"name", "bench"}, {"seed", 3}, {"tasks", {task_dir.string()}},
      {"budget", {{"evaluations_per_task", candidates}, {"stagnation", 100000}}},
      {"island", {{"population", 32}, {"elites", 4}, {"in_flight", 64}}},
      {"operators", {{{"type", "param_mutation"}, {"weight", 0.7}}, {{"type", "param_crossover"}, {"weight", 0.3}}}},
      {"backend", {{"type", "null"}, {"null", {{"wrong_fraction", 0.05}, {"slots", 64}}}}},
      {"progress", {{"mode", "off"}}}};
  auto config = engine::parse_config(doc, "bench.json", plugins());
  auto tasks = engine::load_tasks(config);
  std::unique_ptr<engine::LineageSink> sink;
  CountingSink counting;
  if (hdf5) {
    engine::RunAttributes attrs;
    attrs.config = config.effective;
    attrs.tasks = nlohmann::json::array({tasks[0]->manifest});
    attrs.task_names = {tasks[0]->name};
    fs::remove_all(out);
    fs::create_directories(out);
    sink = engine::open_hdf5_sink(out / "rank-0000.h5", attrs, 256, 2.0);
  }
  engine::IslandOptions opts;
  opts.seed = config.seed;
  opts.budget = config.budget;
  opts.island = config.island;
  engine::Island island(opts, tasks, *config.backend, config.operators, hdf5 ? *sink : counting);
  std::atomic<int> stop{0};
  const auto t0 = std::chrono::steady_clock::now();
  island.run(stop, {});
  sink.reset();   // final flush and close are part of the cost
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  committed = island.snapshot().committed;
  judged = island.snapshot().evaluations;
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t candidates = 100000;
  int repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--candidates") candidates = std::atoll(argv[i + 1]);
    else if (a == "--repeats") repeats = std::atoi(argv[i + 1]);
  }
  const fs::path base = fs::temp_directory_path() / fmt::format("kevo-bench-engine-{}", ::getpid());
  const fs::path task_dir = make_task(base / "task");
  fmt::print("engine overhead per candidate: null backend, {} judged candidates per run, median of {} runs\n",
             candidates, repeats);
  fmt::print("{:<24} {:>8} {:>8} {:>11} {:>10} {:>12} {:>10}\n", "configuration", "records", "judged", "records/s",
             "us/record", "us/judged", "vs target");
  for (bool hdf5 : {false, true}) {
    std::vector<double> secs;
    std::int64_t committed = 0, judged = 0;
    for (int r = 0; r < repeats; ++r) secs.push_back(run_once(task_dir, base / "out", candidates, hdf5, committed, judged));
    std::sort(secs.begin(), secs.end());
    const double med = secs[secs.size() / 2];
    const double per_record = med * 1e6 / static_cast<double>(committed);
    const double per_judged = med * 1e6 / static_cast<double>(judged);
    fmt::print("{:<24} {:>8} {:>8} {:>11.0f} {:>10.2f} {:>12.2f} {:>9.2f}x\n",
               hdf5 ? "island + HDF5 lineage" : "island, no lineage", committed, judged, committed / med, per_record,
               per_judged, per_judged / 100.0);
  }
  fmt::print("records include duplicates (recorded, not judged); us/judged charges all of them to the judged ones\n"
             "target: <= 100 us per candidate (>= 10,000 candidates/s); 'vs target' = us/judged / 100 us\n");
  fs::remove_all(base);
  return 0;
}
