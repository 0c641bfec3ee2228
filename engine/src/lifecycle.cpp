#include "kevo/engine/lifecycle.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/core/text.hpp"
#include "kevo/engine/lineage_sink.hpp"
#include "kevo/engine/report.hpp"
#include "kevo/engine/run.hpp"
#include "kevo/lineage/reader.hpp"
#include "kevo/lineage/schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace kevo::engine {
namespace fs = std::filesystem;

// ---- RunLock ------------------------------------------------------------------

RunLock::RunLock(const fs::path& file) : file_(file) {
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ >= 0) {
    created_ = true;
  } else if (errno == EEXIST) {
    fd_ = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (fd_ < 0) throw Failure("cannot open " + file.string() + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
    created_ = false;
    throw InputError(file.parent_path().string(), "", "a run directory that no running kevo is writing (run.lock is held)");
  }
}

RunLock::RunLock(RunLock&& o) noexcept : fd_(o.fd_), created_(o.created_), file_(std::move(o.file_)) {
  o.fd_ = -1;
  o.created_ = false;
}

RunLock& RunLock::operator=(RunLock&& o) noexcept {
  std::swap(fd_, o.fd_);
  std::swap(created_, o.created_);
  std::swap(file_, o.file_);
  return *this;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);
}

void RunLock::abandon() {
  if (fd_ < 0) return;
  // Removed while still locked, so no other kevo can take it in between.
  if (created_) ::unlink(file_.c_str());
  ::close(fd_);
  fd_ = -1;
  created_ = false;
}

// ---- the run directory ---------------------------------------------------------

RunDirectory RunDirectory::claim_existing(const fs::path& dir) {
  RunDirectory d;
  d.path_ = dir;
  d.resume_ = true;
  if (!fs::is_directory(dir / "lineage"))
    throw InputError(dir.string(), "", "a run directory (holding lineage/ and config.json)");
  bool any = false;
  for (const auto& e : fs::directory_iterator(dir / "lineage"))
    if (e.path().extension() == ".h5") any = true;
  if (!any) throw InputError((dir / "lineage").string(), "", "a run's lineage (rank-NNNN.h5 files); it holds none");
  if (!fs::is_regular_file(dir / "config.json"))
    throw InputError((dir / "config.json").string(), "", "the run's effective config (written when it started)");
  d.lock_ = RunLock(dir / "run.lock");
  return d;
}

RunDirectory RunDirectory::choose_new(const std::string& out, const Config& config) {
  RunDirectory d;
  d.path_ = out.empty() ? default_run_dir(config) : fs::path(out);
  if (fs::exists(d.path_) && !(fs::is_directory(d.path_) && fs::is_empty(d.path_)))
    throw InputError("--out", d.path_.string(), "a new or empty directory (use another --out, or `kevo resume`)");
  return d;
}

void RunDirectory::create(const Config& config) {
  fs::create_directories(path_ / "lineage");
  if (!lock_.held()) lock_ = RunLock(path_ / "run.lock");
  fs::create_directories(path_ / "best");
  fs::create_directories(path_ / "checkpoint");
  write_file(path_ / "config.json", config.effective.dump(2) + "\n");
}

void RunDirectory::abandon() { lock_.abandon(); }

// ---- plan and set up --------------------------------------------------------------

std::string config_file(const RunRequest& request) {
  return request.resume() ? (fs::path(request.resume_dir) / "config.json").string() : request.config;
}

RunPlan plan_run(const RunRequest& request, RunDirectory* claimed) {
  RunPlan plan;
  plan.resume = request.resume();
  if (plan.resume) *claimed = RunDirectory::claim_existing(request.resume_dir);
  plan.file = config_file(request);
  plan.doc = read_json_file(plan.file);
  for (const auto& o : request.overrides) apply_override(plan.doc, o);
  return plan;
}

RunSetup set_up(const nlohmann::json& doc, const std::string& file, const Plugins& plugins, int local_rank) {
  RunSetup s;
  s.device_note = bind_device(parse_islands(doc, file), local_rank);
  s.config = parse_config(doc, file, plugins);
  s.tasks = load_tasks(s.config);
  return s;
}

std::string bind_device(const Config::Islands& is, int local) {
  if (is.device_binding == "none") return "";
  const int device = is.devices > 0 ? local % is.devices : local;
  const std::string head = fmt::format("device binding {}: local rank {} -> device {}", is.device_binding, local, device);
  if (is.device_binding != "cuda_visible_devices") {
    setenv("KEVO_DEVICE_INDEX", std::to_string(device).c_str(), 1);
    return head + fmt::format(" (KEVO_DEVICE_INDEX={})", device);
  }
  // Within the devices the scheduler gave this job (Slurm sets a list),
  // else the host's ordinals.
  std::vector<std::string> given;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
    const std::string s = v;
    for (std::size_t at = 0; at <= s.size();) {
      const std::size_t comma = std::min(s.find(',', at), s.size());
      if (comma > at) given.push_back(s.substr(at, comma - at));
      at = comma + 1;
    }
  }
  if (given.empty()) {
    setenv("CUDA_VISIBLE_DEVICES", std::to_string(device).c_str(), 1);
    return head + fmt::format(" (CUDA_VISIBLE_DEVICES={})", device);
  }
  const std::size_t entry = static_cast<std::size_t>(local) % given.size();
  setenv("CUDA_VISIBLE_DEVICES", given[entry].c_str(), 1);
  return head + fmt::format(" (CUDA_VISIBLE_DEVICES={}: entry {} of the {} already visible)", given[entry], entry,
                            given.size());
}

// ---- lineage ------------------------------------------------------------------------

std::unique_ptr<LineageSink> open_lineage(const fs::path& run_dir, const RunSetup& setup, const LineageStart& start) {
  const Config& config = setup.config;
  RunAttributes attrs;
  attrs.config = config.effective;
  attrs.tasks = nlohmann::json::array();
  for (const auto& t : setup.tasks) {
    attrs.tasks.push_back(t->manifest);
    attrs.task_names.push_back(t->name);
  }
  attrs.seed = config.seed;
  attrs.host = host_name();
  attrs.start_time = unix_now();
  attrs.rank = start.rank;
  attrs.ranks = start.ranks;
  attrs.task_map = start.task_map;
  attrs.append = start.resume;
  auto sink = open_hdf5_sink(run_dir / "lineage" / lineage::rank_file_name(start.rank), attrs,
                             config.lineage.flush_records, config.lineage.flush_seconds);
  const int rank = start.rank;
  if (!start.device_note.empty()) sink->event(LineageSink::EventKind::note, -1, rank, -1, start.device_note);
  // What the candidates' sandbox could not have on this machine (no user
  // namespaces, a container...): said at start, in the lineage and in
  // report.json, never silently (docs/sandbox.md#what-a-run-reports).
  if (const nlohmann::json g = config.backend->guarantees();
      g.is_object() && !g.value("missing", nlohmann::json::array()).empty()) {
    std::string missing;
    for (const auto& m : g["missing"]) missing += (missing.empty() ? "" : "; ") + m.get<std::string>();
    if (start.print) fmt::print(stderr, "kevo: the candidates' sandbox lacks: {}\n", missing);
    sink->event(LineageSink::EventKind::note, -1, rank, -1, "sandbox lacks: " + missing);
  }
  for (const auto& line : baseline_notes(start.baselines)) sink->event(LineageSink::EventKind::note, -1, rank, -1, line);
  if (start.resume && start.prior)
    sink->event(LineageSink::EventKind::note, static_cast<std::int64_t>(start.prior->base), rank, -1,
                fmt::format("resumed with {} rank(s) (was {}); ids from {}; {} candidate(s) recorded as lost",
                            start.ranks, start.prior->old_ranks, start.prior->base, start.prior->lost.size()));
  return sink;
}

// ---- stop and results ------------------------------------------------------------

void StopSignal::note(int sig) noexcept {
  int none = 0;
  if (!signal.compare_exchange_strong(none, sig)) return;
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  unix_ns.store(static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec);
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    case SIGHUP: return "SIGHUP";
    default: return fmt::format("signal {}", signal);
  }
}

void write_results(const fs::path& run_dir, const ResultsInput& in) {
  std::vector<std::string> names;
  for (const auto& t : in.tasks) names.push_back(t->name);
  const auto readers = lineage::read_run_dir(run_dir);
  const auto report = read_report(run_dir, readers);
  for (const auto& row : report.rows) {
    if (row.best_id < 0) continue;
    const auto t = std::find(names.begin(), names.end(), row.task);
    if (t == names.end()) continue;
    for (const auto& rd : readers) {
      const auto* found = rd.find(static_cast<std::uint64_t>(row.best_id));
      if (!found || found->origin_rank != found->rank) continue;
      const Candidate c = rd.candidate(*found);
      const Task& task = *in.tasks[static_cast<std::size_t>(t - names.begin())];
      write_file(run_dir / "best" / (row.task + task.source_extension()), best_file_text(task, c));
      break;
    }
  }
  const StopInfo& stop = in.stop;
  nlohmann::json rj = {{"run_dir", run_dir.string()},
                       {"tasks", rows_to_json(report.rows)},
                       {"stopped", stop.stopped},
                       {"stop_reason", stop.stopped ? stop.reason : ""},
                       {"elapsed_seconds", in.elapsed_seconds},
                       {"ranks", in.ranks}};
  if (!stop.notes.empty()) rj["notes"] = stop.notes;   // rank 0's (each rank's are notes in its lineage)
  if (!report.baselines.is_null()) rj["baselines"] = report.baselines;
  if (!report.llm.empty()) rj["llm"] = to_json(report.llm);
  if (!report.evolved.empty()) rj["evolved"] = fast_p_json(report);
  if (in.config)
    if (const nlohmann::json g = in.config->backend->guarantees(); !g.is_null()) rj["sandbox"] = g;
  write_file(run_dir / "report.json", dump_json(rj, 2) + "\n");
  std::string table = "\n" + format_table(report.rows);
  if (!report.baselines.is_null()) table += "\n" + format_baselines(report.rows, report.baselines);
  if (const std::string f = format_fast_p(report); !f.empty()) table += "\n" + f;
  fmt::print("{}", sanitize_utf8(table, kTerminalText));
  fmt::print("run directory: {}\n", run_dir.string());
  for (const auto& n : stop.notes) fmt::print("{}\n", sanitize_utf8(n, kTerminalText));
  if (!stop.failure.empty())
    fmt::print("stopped by an error (below); everything judged so far is in the lineage\n");
  else if (stop.by_budget)
    fmt::print("stopped: {}; everything judged so far is in the lineage ({})\n", stop.reason,
               stop.advice.empty() ? "continue with `kevo resume " + run_dir.string() + "`" : stop.advice);
  else if (stop.stopped)
    fmt::print("stopped by {}; everything judged so far is in the lineage, work in flight recorded as lost "
               "(continue with `kevo resume {}`)\n",
               stop.reason, run_dir.string());
  std::fflush(stdout);
}

}  // namespace kevo::engine
