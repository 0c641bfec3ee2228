// kevo_bench_command: the command backend's cost per candidate beyond the
// evaluator's own time, and OpenCL candidates judged per minute
// (docs/benchmarks.md#command-backend).
//
//  overhead [N]: N candidates through kevo_command_instant_evaluator, which
//    answers at once and reports its own time per request: one-shot (a
//    process per candidate), then persistent (one process). Per candidate:
//    the engine-side latency from submit to verdict, less the evaluator's
//    own time, and the pipelined rate (all N in flight); then the same with
//    judge "kevo" (kevo writes the inputs, reads and compares the outputs).
//  opencl CONFIG [N [JUDGE]]: N candidates per task (the seed with new
//    seeds, and points of the task's space) judged with timing through the
//    backend of CONFIG (configs/opencl-quickstart.json), its "judge" or
//    JUDGE (evaluator | kevo): candidates per minute.
//
// Usage: kevo_bench_command overhead [N]
//        kevo_bench_command opencl CONFIG [N [evaluator|kevo]]
#include "kevo/command/command_backend.hpp"
#include "kevo/core/process.hpp"
#include "kevo/core/search_space.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/core/task.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <unistd.h>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace kevo;

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The evaluator's own time of every request of a verdict (kevo-judged
// verdicts have two).
double self_ns(const std::string& tail) {
  double sum = 0.0;
  for (auto p = tail.find("self_ns "); p != std::string::npos; p = tail.find("self_ns ", p + 8)) sum += std::atof(tail.c_str() + p + 8);
  return sum;
}

// Submits every source, polls until all are back; returns their verdicts.
std::vector<Verdict> judge_all(Backend& b, const std::shared_ptr<const Task>& t, const std::vector<std::string>& sources,
                               bool pipelined, double& wall) {
  std::vector<Verdict> out(sources.size());
  const auto t0 = Clock::now();
  std::size_t next = 0, done = 0;
  while (done < sources.size()) {
    while (next < sources.size() && (pipelined ? b.wanted() > 0 : b.in_flight() == 0)) {
      b.submit(EvalRequest{next + 1, t, sources[next], 1000 + next, ""});
      ++next;
    }
    for (auto& r : b.poll(std::chrono::milliseconds(50))) {
      out[r.id - 1] = std::move(r.verdict);
      ++done;
    }
  }
  wall = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

int overhead(int n) {
  const fs::path exe = self_executable().parent_path() / "kevo_command_instant_evaluator";
  auto task = std::make_shared<const Task>(load_task(KEVO_BENCH_COMMAND_TASK));
  const std::string sig = task->c_signature() + "\n";
  std::vector<std::string> sources;
  for (int i = 0; i < n; ++i) sources.push_back(sig + "// KEVO_TEST_CORRECT candidate " + std::to_string(i) + "\n");
  std::printf("command backend overhead: %d candidates of %s, kevo_command_instant_evaluator\n", n, task->name.c_str());
  for (const bool kevo_judges : {false, true}) {
    if (kevo_judges)
      std::printf("judge \"kevo\" (kevo writes %d calls' inputs as files, reads and compares the outputs; two requests per "
                  "candidate):\n",
                  static_cast<int>((task->visible.size() + task->hidden.size() + 4) * (3 + task->stress.size())));
    for (const bool persistent : {false, true}) {
      for (const bool pipelined : {false, true}) {
        nlohmann::json cfg = {{"run", {{"argv", persistent ? nlohmann::json{exe.string(), "--serve"} : nlohmann::json{exe.string()}},
                                       {"persistent", persistent}, {"max_requests", 1000000}, {"jobs", pipelined ? 2 : 1}}},
                              {"cache_dir", ""},
                              {"judge", kevo_judges ? "kevo" : "evaluator"}};
        StrictObject o(cfg, (fs::temp_directory_path() / "bench.json").string(), "/backend/command");
        auto b = command::make_command_backend(command::parse_command_options(o));
        b->prepare(*task);
        double wall = 0;
        const auto vs = judge_all(*b, task, sources, pipelined, wall);
        std::vector<double> latency_ms, self_ms;
        double self_sum_ms = 0;
        int ok = 0;
        for (const auto& v : vs) {
          ok += v.is_correct();
          latency_ms.push_back(v.worker_seconds * 1e3);
          self_ms.push_back(self_ns(v.output_tail) / 1e6);
          self_sum_ms += self_ms.back();
        }
        const char* mode = persistent ? "persistent" : "one-shot  ";
        if (!pipelined)
          std::printf("  %s one at a time: %d/%d correct; per candidate: request to answer median %.3f ms, evaluator's own "
                      "%.3f ms; submit to verdict (mean, kevo's own work included) %.3f ms: overhead %.3f ms (target %s)\n",
                      mode, ok, n, median(latency_ms), median(self_ms), wall * 1e3 / n, (wall * 1e3 - self_sum_ms) / n,
                      persistent ? "1 ms" : "10 ms");
        else
          std::printf("  %s 2 jobs, all queued: %d/%d correct in %.2f s: %.3f ms of wall per candidate, %.0f per minute\n",
                      mode, ok, n, wall, wall * 1e3 / n, n / wall * 60);
        const auto s = command::command_stats(*b);
        std::printf("             evaluator processes started %llu, requests %llu\n",
                    static_cast<unsigned long long>(s.evaluator_starts), static_cast<unsigned long long>(s.requests));
      }
    }
  }
  return 0;
}

int opencl(const std::string& config, int n, const std::string& judge) {
  const nlohmann::json root = read_json_file(config);
  StrictObject top(root, config, "");
  StrictObject be(root.at("backend"), config, "/backend");
  StrictObject o(root.at("backend").at("command"), config, "/backend/command");
  auto opts = command::parse_command_options(o);
  const std::string cache = (fs::temp_directory_path() / ("kevo-bench-command-" + std::to_string(::getpid()))).string();
  opts.cache_dir = cache;
  if (!judge.empty()) opts.kevo_judges = judge == "kevo";
  auto b = command::make_command_backend(opts);
  const fs::path tasks = fs::path(config).parent_path() / "tasks" / "opencl";
  double total_wall = 0;
  int total = 0, total_ok = 0;
  std::printf("OpenCL (PoCL) candidates judged with timing through %s (run.jobs %d, persistent %s, judge %s)\n",
              config.c_str(), opts.run.jobs, opts.run.persistent ? "yes" : "no", opts.kevo_judges ? "kevo" : "evaluator");
  for (const auto& d : find_task_dirs(tasks)) {
    auto task = std::make_shared<const Task>(load_task(d));
    const auto tp = Clock::now();
    b->prepare(*task);
    const double prep = std::chrono::duration<double>(Clock::now() - tp).count();
    // Points of the space in order (the seed first), each a fresh build.
    std::vector<std::string> sources = {task->seed_source};
    const auto points = task->space.enumerate();
    for (std::size_t i = 0; i < points.size() && static_cast<int>(sources.size()) < n; ++i)
      sources.push_back(apply_point(task->space, points[i], task->seed_source));
    while (static_cast<int>(sources.size()) < n) sources.push_back(task->seed_source);
    double wall = 0;
    const auto vs = judge_all(*b, task, sources, true, wall);
    int ok = 0;
    std::vector<double> worker;
    for (const auto& v : vs) {
      ok += v.is_correct();
      worker.push_back(v.worker_seconds);
    }
    std::printf("  %-8s prepare %.2f s; %d candidates (%d correct) in %.2f s: %.1f per minute, evaluator %.3f s each (median)\n",
                task->name.c_str(), prep, n, ok, wall, n / wall * 60, median(worker));
    total_wall += wall;
    total += n;
    total_ok += ok;
  }
  std::printf("  all tasks: %d candidates (%d correct) in %.1f s: %.1f OpenCL candidates judged per minute\n", total,
              total_ok, total_wall, total / total_wall * 60);
  std::error_code ec;
  fs::remove_all(cache, ec);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "overhead") return overhead(argc > 2 ? std::atoi(argv[2]) : 200);
    if (mode == "opencl" && argc > 2) return opencl(argv[2], argc > 3 ? std::atoi(argv[3]) : 12, argc > 4 ? argv[4] : "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kevo_bench_command: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: %s overhead [N] | opencl CONFIG [N [evaluator|kevo]]\n", argv[0]);
  return 2;
}
