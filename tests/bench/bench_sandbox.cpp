// kevo_bench_sandbox: what the sandbox costs per CPU candidate beyond
// compiling and running it (target: <= 20 ms).
//
//  1. runner round trip: a no-op program (/bin/true) started the way
//     candidates are (scratch dir with a file, input channel, result pipe,
//     rlimits, own process group), then reaped and cleaned up;
//  2. worker overhead: engine-side wall time of a kevo-cpu-worker judging a
//     cached candidate minus the time the worker spent inside main() (the
//     difference is exec, dynamic loading, pipes, reaping, scratch dirs);
//  3. end to end: submit -> verdict for a cached candidate (correctness +
//     timing), for scale;
//  4. the spawner a worker under the seccomp policy runs its tools through
//     (the CUDA worker's sanitizer and profiler stages): its start and one
//     run of /bin/true, beside a plain posix_spawn + waitpid, for scale.
//
// Usage: kevo_bench_sandbox [TASK_DIR] [ITERATIONS]
//   TASK_DIR defaults to the adversarial test task of the source tree.
#include "kevo/core/task.hpp"
#include "kevo/cpu/cpu_backend.hpp"
#include "kevo/sandbox/runner.hpp"
#include "kevo/sandbox/spawner.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <vector>

extern char** environ;

namespace fs = std::filesystem;

namespace {

constexpr double kTargetMs = 20.0;

struct Stat {
  double mean = 0, median = 0, p90 = 0;
};

Stat stats(std::vector<double> v) {
  Stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.median = v[v.size() / 2];
  s.p90 = v[std::min(v.size() - 1, v.size() * 9 / 10)];
  return s;
}

void print(const char* what, const Stat& s, bool against_target) {
  std::printf("%-44s mean %8.2f ms  median %8.2f ms  p90 %8.2f ms", what, s.mean, s.median, s.p90);
  if (against_target) std::printf("  (%.2f x the %.0f ms target)", s.median / kTargetMs, kTargetMs);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path task_dir = argc > 1 ? fs::path(argv[1]) : fs::path(KEVO_BENCH_TASK_DIR);
  const int n = argc > 2 ? std::max(1, std::atoi(argv[2])) : 30;
  using Clock = std::chrono::steady_clock;
  try {
    // 1. Runner round trip.
    std::vector<double> spawn;
    {
      kevo::sandbox::Runner runner;
      for (int i = 0; i < n; ++i) {
        kevo::sandbox::Spec s;
        s.argv = {"/bin/true"};
        s.env = {"PATH=/usr/bin:/bin"};
        s.scratch_base = kevo::sandbox::default_scratch_base();
        s.files = {{"candidate.cpp", std::string(4096, 'x')}};
        s.input_fd = 3;
        s.input = std::string(512, 'n');
        s.result_fd = 4;
        s.limits.wall_seconds = 10;
        s.limits.cpu_seconds = 10;
        s.limits.memory_mb = 4096;
        s.limits.open_files = 1024;
        s.limits.processes = 1024;
        const auto t0 = Clock::now();
        { kevo::sandbox::Finished f = runner.run(std::move(s)); }   // includes scratch removal
        spawn.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
    }

    // 4. The spawner, and posix_spawn for comparison.
    std::vector<double> spawner_start, spawner_run, plain_spawn;
    for (int i = 0; i < n; ++i) {
      const auto t0 = Clock::now();
      kevo::sandbox::Spawner sp({{{"/bin/true"}, "", 10}});
      const auto t1 = Clock::now();
      if (sp.run(0).exit_code != 0) {
        std::fprintf(stderr, "the spawner's /bin/true failed\n");
        return 1;
      }
      const auto t2 = Clock::now();
      char* const args[] = {const_cast<char*>("/bin/true"), nullptr};
      pid_t pid = -1;
      int status = 0;
      if (::posix_spawn(&pid, "/bin/true", nullptr, nullptr, args, environ) != 0 || ::waitpid(pid, &status, 0) != pid) {
        std::fprintf(stderr, "posix_spawn /bin/true failed\n");
        return 1;
      }
      plain_spawn.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t2).count());
      spawner_start.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      spawner_run.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    }

    // 2 + 3. Worker overhead and end to end, on a cached candidate.
    nlohmann::json cfg = {{"cache_dir", ""},
                          {"worker", KEVO_BENCH_WORKER},
                          {"eval_jobs", 1},
                          {"timing", {{"warmup", 1}, {"min_repeats", 5}, {"budget_seconds", 0.05}}}};
    kevo::StrictObject obj(cfg, "bench", "/backend/cpu");
    kevo::cpu::CpuBackend backend(kevo::cpu::parse_cpu_options(obj));
    auto task = std::make_shared<kevo::Task>(kevo::load_task(task_dir));
    const auto tp0 = Clock::now();
    backend.prepare(*task);
    const double prepare_ms = std::chrono::duration<double, std::milli>(Clock::now() - tp0).count();
    const std::string source = task->seed_source;
    const auto tc0 = Clock::now();
    kevo::Verdict first = backend.evaluate(task, source, 1);   // compiled already by prepare(): a cache hit
    const double first_ms = std::chrono::duration<double, std::milli>(Clock::now() - tc0).count();
    if (!first.is_correct()) {
      std::fprintf(stderr, "the seed was not judged correct: %s\n", first.message.c_str());
      return 1;
    }
    std::vector<double> overhead, end_to_end;
    for (int i = 0; i < n; ++i) {
      const auto before = backend.stats();
      const auto t0 = Clock::now();
      kevo::Verdict v = backend.evaluate(task, source, static_cast<std::uint64_t>(i + 2));
      end_to_end.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      const auto after = backend.stats();
      if (!v.is_correct() || after.worker_results != before.worker_results + 1) {
        std::fprintf(stderr, "evaluation %d: %s\n", i, v.message.c_str());
        return 1;
      }
      overhead.push_back(1e3 * ((after.worker_wall_seconds - before.worker_wall_seconds) -
                                (after.worker_inner_seconds - before.worker_inner_seconds)));
    }

    std::printf("kevo_bench_sandbox: task %s, %d iterations\n", task->name.c_str(), n);
    print("runner round trip (/bin/true, full spec)", stats(spawn), true);
    print("worker sandbox overhead (wall - in-main)", stats(overhead), true);
    print("end to end, cached candidate (judge+time)", stats(end_to_end), false);
    print("spawner start", stats(spawner_start), false);
    print("spawner run of /bin/true", stats(spawner_run), false);
    print("posix_spawn + waitpid of /bin/true", stats(plain_spawn), false);
    std::printf("%-44s %8.2f ms (reference + seed compile, self-check, 3 nulls, seed)\n", "prepare()", prepare_ms);
    std::printf("%-44s %8.2f ms\n", "first evaluation", first_ms);
    const double worst = std::max(stats(spawn).median, stats(overhead).median);
    std::printf("result: sandbox overhead per candidate %.2f ms (median), target %.0f ms: %s\n", worst, kTargetMs,
                worst <= kTargetMs ? "within target" : "OVER TARGET");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kevo_bench_sandbox: %s\n", e.what());
    return 1;
  }
}
