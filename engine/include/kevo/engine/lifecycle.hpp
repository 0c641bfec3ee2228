// The phases of `kevo run` and `kevo resume` (docs/architecture.md#the-run):
//
//   plan       what the run is: the config (the run's config.json on resume)
//              with --set applied; a resume's directory claimed (run.lock)
//   set up     every rank: the device binding, the config parsed, the
//              tasks loaded and prepared by the backend
//   directory  the run directory created (fresh) or taken over (resume),
//              only once every rank has set up and restored; a run that
//              fails before leaves the directory as it was
//   restore    a resume: what the sessions before left (engine/resume.hpp)
//   lineage    this rank's lineage file and its start notes
//   search     the island (engine/island.hpp) under its checkpoint hook
//   stop       how the search ended: finished, a signal, a budget
//   results    rank 0: best/, report.json, the table and the stop line
//
// None of them knows MPI: engine/mpi/run_islands.cpp composes them, with
// the broadcasts and barriers between them and the island network as the
// search's hook. A phase can be driven without a whole run (tests/engine).
#pragma once

#include "kevo/core/task.hpp"
#include "kevo/engine/config.hpp"
#include "kevo/engine/island.hpp"
#include "kevo/engine/resume.hpp"

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kevo::engine {

struct RunRequest {
  std::string config;                  // fresh run: the config file
  std::string resume_dir;              // resume: the run directory
  std::vector<std::string> overrides;  // --set
  std::string out;                     // fresh run: --out
  bool resume() const { return !resume_dir.empty(); }
};
// The config file a request reads: the given one, or a resume's config.json.
std::string config_file(const RunRequest& request);

// An flock(2) on RUN_DIR/run.lock, held by rank 0 for the whole run, so that
// `kevo resume` refuses a run directory a live run is still writing. The
// kernel drops it when the process dies, however it dies.
class RunLock {
 public:
  RunLock() = default;
  // Throws InputError when another process holds it.
  explicit RunLock(const std::filesystem::path& file);
  RunLock(RunLock&& o) noexcept;
  RunLock& operator=(RunLock&& o) noexcept;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();
  bool held() const { return fd_ >= 0; }
  // Whether this lock made the file (it did not exist before).
  bool created() const { return created_; }
  // Unlocks, and removes the file when this lock made it.
  void abandon();

 private:
  int fd_ = -1;
  bool created_ = false;
  std::filesystem::path file_;
};

// The run directory of this session (rank 0 owns it; the other ranks only
// know its path).
class RunDirectory {
 public:
  RunDirectory() = default;
  // A resume's: checks it holds lineage/ with at least one rank file and
  // config.json, and takes run.lock. Throws InputError.
  static RunDirectory claim_existing(const std::filesystem::path& dir);
  // A fresh run's: --out or OUT_DIR/NAME-TIMESTAMP, new or empty. Checks
  // only; create() makes it. Throws InputError.
  static RunDirectory choose_new(const std::string& out, const Config& config);

  const std::filesystem::path& path() const { return path_; }
  bool resume() const { return resume_; }
  // Makes (fresh) or completes (resume) the layout and writes config.json;
  // from here on the run owns the directory.
  void create(const Config& config);
  // The session failed before create(): everything this session made is
  // removed (run.lock when it made it); the directory is as it was.
  void abandon();

 private:
  std::filesystem::path path_;
  bool resume_ = false;
  RunLock lock_;
};

// Phase "plan" (one process, rank 0). Reads the config file (on resume the
// run's config.json, after claiming the directory into `claimed`) and
// applies the overrides. Creates nothing but a resume's run.lock, which
// RunDirectory::abandon() removes again when it made it. Throws InputError
// naming the file or the directory.
struct RunPlan {
  nlohmann::json doc;                  // the config, --set applied
  std::string file;                    // where it came from
  bool resume = false;
};
RunPlan plan_run(const RunRequest& request, RunDirectory* claimed);

// Phase "set up" (every rank). The device binding first: building the
// backend, preparing the tasks (reference and null candidates), the
// baselines and the workers all start processes, which must run on this
// rank's device.
struct RunSetup {
  Config config;
  std::vector<std::shared_ptr<const Task>> tasks;
  std::string device_note;             // which device this rank got ("" = no binding)
};
RunSetup set_up(const nlohmann::json& doc, const std::string& file, const Plugins& plugins, int local_rank);

// Exports this rank's device (islands.device_binding) into the process
// environment, which every process the backend starts inherits. Returns the
// note that says which device the rank got ("" for device_binding none).
std::string bind_device(const Config::Islands& islands, int local_rank);

// Phase "lineage": this rank's lineage file (appended to on resume), with
// the notes every run starts with (device, sandbox gaps, baselines, resume).
struct LineageStart {
  int rank = 0, ranks = 1;
  std::vector<std::uint32_t> task_map;   // local task -> run task (empty = identity)
  bool resume = false;
  const Prior* prior = nullptr;          // on resume
  std::string device_note;
  nlohmann::json baselines;
  bool print = false;                    // rank 0: also say the sandbox's gaps on stderr
};
std::unique_ptr<LineageSink> open_lineage(const std::filesystem::path& run_dir, const RunSetup& setup,
                                          const LineageStart& start);

// The first stop signal a process received, written by its handler
// (async-signal-safe: lock-free atomics only).
struct StopSignal {
  std::atomic<int> signal{0};                 // 0 = none
  std::atomic<std::int64_t> unix_ns{0};       // when it arrived (CLOCK_REALTIME)
  // For the handler: records the first signal and its time.
  void note(int sig) noexcept;
};

// Phase "stop": how a session ended.
struct StopInfo {
  bool stopped = false;
  std::string reason;          // "signal SIGTERM", "rank lost", or a budget's summary
  bool by_budget = false;
  int signal = 0;              // the signal that stopped it (0 = none)
  double signal_time = 0.0;    // when it arrived (Unix seconds; 0 = none)
  std::string advice;          // what to do next, after a budget's stop
  std::string failure;         // a plugin's error that ended the run (exit 1), "" = none
  std::vector<std::string> notes;   // what plugins report at the end (replay counts)
};
// The name of a stop signal ("SIGTERM"), or "signal N".
std::string signal_name(int signal);

// Phase "results" (rank 0, every rank's lineage final): best/<task>.cpp,
// report.json, the table on stdout and one line saying how the run
// stopped and how to continue.
struct ResultsInput {
  std::vector<std::shared_ptr<const Task>> tasks;
  const Config* config = nullptr;
  StopInfo stop;
  double elapsed_seconds = 0.0;
  int ranks = 1;
};
void write_results(const std::filesystem::path& run_dir, const ResultsInput& in);

}  // namespace kevo::engine
