// The native pipeline that every backend building a shared object per
// candidate shares (the CPU and CUDA backends are flavours of it): a
// parallel compile stage in sandboxed compiler processes with a compile
// cache, then one judge process per evaluation (kevo-cpu-worker,
// kevo-cuda-worker), which runs the reference and the candidate in kernel
// hosts of their own (docs/sandbox.md). Requests and results travel as
// kevo/native/protocol.hpp spells them. Config keys and defaults:
// docs/sandbox.md; verdicts: docs/verdicts.md.
#pragma once

#include "kevo/core/backend.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/core/task.hpp"
#include "kevo/native/compile_cache.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kevo::native {

struct NativeLimits {
  double wall_seconds = 30.0;          // per evaluation (worker), wall clock
  double cpu_seconds = 0.0;            // per evaluation, all threads (0: wall_seconds x cores)
  std::int64_t memory_mb = 4096;       // address space of the worker (RLIMIT_AS)
  std::int64_t output_kb = 64;         // captured stdout+stderr of a candidate; more => output_limit
  int open_files = 64;                 // RLIMIT_NOFILE of the worker once it loaded the candidate
  int processes = 1024;                // RLIMIT_NPROC headroom (threads count too)
  double compile_wall_seconds = 60.0;
  std::int64_t compile_memory_mb = 4096;
  std::int64_t file_mb = 256;          // RLIMIT_FSIZE of compiler and worker
};

struct NativeTiming {
  int warmup = 1;                      // untimed calls of each side per shape
  int min_repeats = 5;
  int max_repeats = 100;
  double budget_seconds = 0.25;        // per candidate, split over the visible shapes
  std::int64_t flush_kb = 0;           // cache flush buffer (0: 2 x last-level cache, at most 256 MiB; 64 MiB if unknown)
  double max_iqr_fraction = 0.25;      // a timing with a wider IQR (or two groups) is timed again, then flagged
};

// The machine's peaks behind the roofline floor (docs/verdicts.md#timing):
// a time under floor_fraction x max(flops / peak, bytes / bandwidth) is an
// error, not a speedup. 0 = measured or estimated at start (CPU), none.
struct NativeRoofline {
  double peak_gflops = 0.0;
  double peak_gbps = 0.0;
  double floor_fraction = 0.9;
};

// What a backend that builds a shared object per candidate and judges it in
// a judge process changes (the CUDA backend); the CPU backend uses the
// defaults.
struct Flavour {
  std::string name = "cpu";                      // the backend's name in errors and verdicts
  std::string source_file = "candidate.cpp";     // the file name the compiler is given
  std::vector<std::string> link_flags = {"-shared", "-fPIC", "-Wl,-z,defs"};
  // What a reference links besides (trusted code; CUDA: cuBLAS). Candidates
  // link only the libraries their task allows (Task::libraries), as -l<name>
  // through link_libraries.
  std::vector<std::string> reference_link = {};
  // Task library name -> linker arguments ("cublas" -> {"-lcublas"}).
  std::map<std::string, std::vector<std::string>> link_libraries = {};
  std::string policy = "cpu";                    // the kernel hosts' seccomp variant
  std::string worker_name = "kevo-cpu-worker";   // looked up next to the running executable
  bool accelerator = false;                      // BackendNeeds::accelerator
  std::vector<std::string> worker_env;           // extra "KEY=VALUE" for the worker
  std::vector<std::string> worker_env_pass;      // engine variables passed on to the worker
  nlohmann::json worker_request = nlohmann::json::object();   // JudgeRequest::flavour of every request
  int profile_every = 0;                         // > 0: "profile": true in every n-th timed request
  bool profile_on_request = false;               // "profile": true also where EvalRequest::profile asks
  std::vector<std::string> health_argv;          // worker arguments of a health check run after a
                                                 // result flagged "cuda_error" (empty: none)
};

struct NativeOptions {
  Flavour flavour;
  std::string compiler = "c++";
  std::vector<std::string> flags = {"-O2", "-march=native", "-fopenmp", "-fno-math-errno"};
  int compile_jobs = 0;                // 0: number of cores
  int eval_jobs = 1;                   // 1: timings do not overlap
  std::string cache_dir;               // "" = no persistent compile cache
  CacheLimits cache_limits;            // cache.max_entry_mb, cache.max_total_mb
  std::string worker;                  // "" = kevo-cpu-worker next to the running executable
  std::string scratch_dir;             // base of scratch dirs ("" = $TMPDIR or /tmp)
  bool seccomp = true;                 // false: judge without the system-call policy
  bool namespaces = true;              // false: kernel hosts without namespaces of their own
  int trials = 3;                      // correctness trials (fresh inputs each), at least 3
  int judge_threads = 0;               // threads of the protocol's bulk work; 0: cores / eval_jobs
  NativeLimits limits;
  NativeTiming timing;
  NativeRoofline roofline;
};

// Reads the backend's config object ("backend": {"cpu": {...}}). Unknown keys
// are InputErrors naming the file and key. A missing cache_dir means
// $XDG_CACHE_HOME/kevo (or $HOME/.cache/kevo); "" turns the cache off.
// `defaults` gives the values of absent keys (the CUDA backend's differ).
NativeOptions parse_native_options(StrictObject& obj, NativeOptions defaults = {});

// The effective config (defaults resolved: cores, cache dir, flush size...).
nlohmann::json to_json(const NativeOptions&);

// Throws Failure when the compiler or the worker cannot be found.
std::unique_ptr<Backend> make_native_backend(NativeOptions);

// --- exposed for tests and the benchmark ---------------------------------

// The default cache dir ($XDG_CACHE_HOME/kevo or $HOME/.cache/kevo; "" if neither).
std::string default_cache_dir();
// 2 x the last-level cache size from sysfs (at most 256 MiB), or 64 MiB; in KiB.
std::int64_t default_flush_kb();
// Generous peaks of this machine's CPUs (cores x clock x SIMD FLOP per
// cycle; a measured copy bandwidth x 4): a floor no honest kernel meets.
NativeRoofline estimate_cpu_roofline(int cores);
// The source actually compiled: the given source plus the entry adapter.
std::string compiled_source(const Task& task, const std::string& source);

class NativeBackend final : public Backend {
 public:
  explicit NativeBackend(NativeOptions options);
  ~NativeBackend() override;

  const NativeOptions& options() const;
  // Counters for tests and benchmarks.
  struct Stats {
    std::uint64_t compiles = 0;        // compiler processes started
    std::uint64_t cache_hits = 0;      // compiles skipped
    std::uint64_t health_checks = 0;   // device health checks run after an accelerator error
    std::uint64_t workers = 0;         // worker processes started
    std::uint64_t worker_results = 0;  // workers that sent a result
    std::uint64_t forbidden_links = 0; // candidates whose link named a library the task does not allow
    double worker_wall_seconds = 0.0;  // engine-side wall time of those workers
    double worker_inner_seconds = 0.0; // time they spent inside main()
    // Summed over results: where workers that report "phases" (the CUDA
    // worker) spent their time, by phase (docs/cuda.md).
    std::map<std::string, double> worker_phase_seconds;
    // Workers whose device memory pool grew past the reservation made
    // before they first took the accelerator's slot ("pool_growth_mib",
    // CUDA with slot_hold "phase"), and by how much in all.
    std::uint64_t workers_pool_grew = 0;
    double pool_growth_mib = 0.0;
    // Each worker's "timeline" (the CUDA worker: its start, the end of each
    // phase, its waits for the slot, on the host's monotonic clock), for a
    // benchmark that asks where the time went; the first kMaxTimelines only.
    static constexpr std::size_t kMaxTimelines = 2000;
    std::vector<nlohmann::json> worker_timelines;
    // The accelerator's exclusive timing holds that workers report
    // ("slot_intervals": [start, end] on the host's monotonic clock), for a
    // benchmark's duty cycle; the first kMaxSlotIntervals only.
    static constexpr std::size_t kMaxSlotIntervals = 100000;
    std::vector<std::pair<double, double>> slot_intervals;
    std::vector<std::pair<double, double>> slot_shared_intervals;   // its shared holds (correctness work)
  };
  Stats stats() const;

 protected:
  BackendNeeds do_needs() const override;
  void do_prepare(const Task& task) override;
  std::size_t do_wanted() const override;
  void do_submit(EvalRequest request) override;
  std::vector<EvalResult> do_poll(std::chrono::milliseconds max_wait) override;
  void do_cancel_all() override;
  // The task's source baselines, compiled with their libraries and judged
  // in judge mode with timing, like candidates (never profiled).
  std::vector<BaselineVerdict> do_judge_baselines(const Task& task, std::uint64_t seed) override;
  nlohmann::json do_guarantees() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kevo::native
