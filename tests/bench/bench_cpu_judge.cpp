// kevo_bench_cpu_judge: what judging one CPU candidate costs beyond its own
// work, and how repeatable its timing is (docs/benchmarks.md#cpu-judge).
// It uses only the CPU backend's public API, so the same source builds
// against an older kevo for a before/after comparison.
//
//  1. per candidate: engine-side wall time from submit to verdict of a
//     candidate whose compiled object is cached, with and without timing,
//     and the judge's process overhead (its wall time minus its time inside
//     main(): exec, loading, pipes, reaping);
//  2. timing CV: the same candidate judged N times (fresh seeds); the
//     coefficient of variation of its median time and of its speedup.
//
// Usage: kevo_bench_cpu_judge TASK_DIR CANDIDATE_FILE [N] [BUDGET_SECONDS]
#include "kevo/core/strict_json.hpp"
#include "kevo/core/task.hpp"
#include "kevo/cpu/cpu_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <vector>

namespace {

double mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size()); }

double cv(const std::vector<double>& v) {
  const double m = mean(v);
  double s2 = 0;
  for (double x : v) s2 += (x - m) * (x - m);
  return std::sqrt(s2 / static_cast<double>(v.size() - 1)) / m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TASK_DIR CANDIDATE_FILE [N] [BUDGET_SECONDS]\n", argv[0]);
    return 2;
  }
  const int n = argc > 3 ? std::atoi(argv[3]) : 20;
  const double budget = argc > 4 ? std::atof(argv[4]) : 0.25;
  std::ifstream in(argv[2]);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string source = ss.str();
  auto task = std::make_shared<kevo::Task>(kevo::load_task(argv[1]));

  nlohmann::json cfg = {{"cache_dir", ""}, {"timing", {{"budget_seconds", budget}}}};
  kevo::StrictObject obj(cfg, "bench.json", "/backend/cpu");
  kevo::cpu::CpuBackend backend(kevo::cpu::parse_cpu_options(obj));
  backend.prepare(*task);
  backend.evaluate(task, source, 1);   // compiled once; every later call hits the cache

  std::vector<double> wall, overhead, medians, speedups;
  for (int i = 0; i < n; ++i) {
    const auto before = backend.stats();
    const auto t0 = std::chrono::steady_clock::now();
    const kevo::Verdict v = backend.evaluate(task, source, 100 + static_cast<std::uint64_t>(i));
    wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    const auto after = backend.stats();
    overhead.push_back(1e3 * ((after.worker_wall_seconds - before.worker_wall_seconds) -
                              (after.worker_inner_seconds - before.worker_inner_seconds)));
    if (v.status != kevo::Status::correct) {
      std::fprintf(stderr, "judgement %d: %s: %s\n", i, std::string(kevo::to_string(v.status)).c_str(), v.message.c_str());
      return 1;
    }
    medians.push_back(v.cand_median_ns);
    speedups.push_back(v.speedup);
  }
  std::printf("task %s, %d judgements, timing budget %.3f s\n", task->name.c_str(), n, budget);
  std::printf("submit -> verdict (cached, timed)   median %8.2f ms  mean %8.2f ms\n", median(wall), mean(wall));
  std::printf("judge process overhead (wall - main) median %8.2f ms  mean %8.2f ms\n", median(overhead), mean(overhead));
  std::printf("candidate median time                mean %10.2f us  CV %.3f%%\n", mean(medians) / 1e3, 100 * cv(medians));
  std::printf("speedup                              mean %10.4f     CV %.3f%%\n", mean(speedups), 100 * cv(speedups));
  std::printf("values (us):");
  for (double m : medians) std::printf(" %.1f", m / 1e3);
  std::printf("\n");
  return 0;
}
