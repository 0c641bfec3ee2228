#include "kevo/engine/run.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/text.hpp"
#include "kevo/engine/lineage_sink.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <set>

namespace kevo::engine {
namespace fs = std::filesystem;

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

void write_file(const fs::path& path, const std::string& text) {
  // Write then rename, so a reader never sees half a file.
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw Failure("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

fs::path default_run_dir(const Config& config) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  fs::path base = fs::path(config.out_dir) / fmt::format("{}-{}", config.name, stamp);
  fs::path dir = base;
  for (int k = 2; fs::exists(dir); ++k) dir = base.string() + fmt::format("-{}", k);
  return dir;
}

std::string best_file_text(const Task& task, const Candidate& c) {
  // A comment in the source's own language (Python for torch tasks).
  const std::string mark = task.is_torch() ? "#" : "//";
  std::string header = fmt::format(
      "{0} kevo: best candidate for task '{1}'\n{0} id {2}  operator {3}  speedup {4:.3f}x over the reference"
      "  (median {5:.1f} us vs {6:.1f} us)\n",
      mark, task.name, c.id, c.op, c.verdict.speedup, c.verdict.cand_median_ns / 1e3, c.verdict.ref_median_ns / 1e3);
  if (!c.params_json.empty()) header += mark + " parameters " + c.params_json + "\n";
  return header + c.source;
}

bool has_source_baselines(const std::vector<std::shared_ptr<const Task>>& tasks) {
  return std::any_of(tasks.begin(), tasks.end(), [](const auto& t) { return !t->source_baselines.empty(); });
}

nlohmann::json source_baseline_record(const Task::SourceBaseline& b, const Verdict& v) {
  nlohmann::json r = {{"source", b.path.filename().string()}, {"link", b.link}, {"status", to_string(v.status)}};
  // A baseline that fails its judging is reported, never used as a yardstick.
  if (!v.is_correct() || v.cand_median_ns <= 0) {
    r["error"] = v.is_correct() ? std::string("correct, but not timed") : std::string(to_string(v.status)) + ": " + v.message;
    return r;
  }
  r["median_ms"] = v.cand_median_ns / 1e6;
  r["iqr_ms"] = v.cand_iqr_ns / 1e6;
  r["ref_ms"] = v.ref_median_ns / 1e6;
  r["speedup_vs_ref"] = v.speedup;
  r["repeats"] = v.repeats;
  r["max_abs_error"] = v.max_abs_error;
  r["rel_l2_error"] = v.rel_l2_error;
  if (!v.message.empty()) r["message"] = v.message;   // a host-timing or re-verification remark
  return r;
}

nlohmann::json record_baselines(const BaselineHook& hook, const std::vector<std::shared_ptr<const Task>>& tasks,
                                std::uint64_t seed, const fs::path& run_dir, std::FILE* log, Backend* backend) {
  const bool sources = backend && has_source_baselines(tasks);
  if (!hook && !sources) return nullptr;
  nlohmann::json doc = {{"format", "kevo-baselines/1"}, {"measured", false}, {"tasks", nlohmann::json::object()}};
  if (hook) {
    try {
      doc = hook(tasks, seed);
    } catch (const std::exception& e) {
      // Baselines are context for the report, not part of the search: losing
      // them must not lose the run.
      doc = {{"format", "kevo-baselines/1"}, {"measured", false},
             {"note", std::string("measuring failed: ") + e.what()}, {"tasks", nlohmann::json::object()}};
      if (log) fmt::print(log, "kevo: library baselines: {}\n", sanitize_utf8(doc["note"].get<std::string>(), kTerminalText));
    }
  }
  if (sources) {
    if (!doc.is_object()) doc = {{"format", "kevo-baselines/1"}, {"measured", false}};
    if (!doc.contains("tasks") || !doc["tasks"].is_object()) doc["tasks"] = nlohmann::json::object();
    for (const auto& t : tasks) {
      if (t->source_baselines.empty()) continue;
      if (log) {
        std::vector<std::string> names;
        for (const auto& b : t->source_baselines) names.push_back(b.name);
        fmt::print(log, "kevo: library baselines: {}: {} (task sources) ...\n", t->name, fmt::join(names, ", "));
        std::fflush(log);
      }
      nlohmann::json entries = nlohmann::json::object();
      try {
        const std::vector<BaselineVerdict> verdicts = backend->judge_baselines(*t, seed);
        for (std::size_t i = 0; i < t->source_baselines.size(); ++i) {
          const auto& b = t->source_baselines[i];
          entries[b.name] = i < verdicts.size() ? source_baseline_record(b, verdicts[i].verdict)
                                                : nlohmann::json{{"source", b.path.filename().string()},
                                                                 {"error", "the " + backend->name() +
                                                                               " backend does not judge source baselines"}};
        }
      } catch (const std::exception& e) {
        for (const auto& b : t->source_baselines)
          entries[b.name] = {{"source", b.path.filename().string()}, {"error", std::string("judging failed: ") + e.what()}};
      }
      if (log)
        for (const auto& [name, r] : entries.items())
          fmt::print(log, "kevo: library baselines: {}: {} {}\n", t->name, name,
                     r.contains("error") ? "failed: " + sanitize_utf8(r["error"].get<std::string>(), kTerminalText)
                                         : fmt::format("{:.4f} ms, speedup {:.2f}x over the reference",
                                                       r["median_ms"].get<double>(), r["speedup_vs_ref"].get<double>()));
      doc["tasks"][t->name]["sources"] = std::move(entries);
    }
  }
  write_file(run_dir / "baselines.json", dump_json(doc, 2) + "\n");
  return doc;
}

std::vector<std::shared_ptr<const Task>> load_tasks(const Config& config) {
  std::vector<std::shared_ptr<const Task>> tasks;
  std::set<std::string> names;
  for (const auto& dir : config.task_dirs) {
    for (const auto& tdir : find_task_dirs(dir)) {
      auto task = std::make_shared<Task>(load_task(tdir));
      if (task->backend != config.backend_type)
        throw InputError(task->manifest_path.string(), "/backend",
                         fmt::format("'{}' (the run's backend), not '{}'", config.backend_type, task->backend));
      if (!names.insert(task->name).second)
        throw InputError(task->manifest_path.string(), "/name", fmt::format("a name unique in the run; '{}' appears twice", task->name));
      tasks.push_back(std::move(task));
    }
  }
  // What the operators need for each task (an LLM operator: the prompt and
  // knowledge files of the task's backend) is checked before any backend
  // work: a missing file is an input error, not a failure an hour in.
  for (const auto& t : tasks) prepare_operators(config, *t);
  for (const auto& t : tasks) config.backend->prepare(*t);
  return tasks;
}

void prepare_operators(const Config& config, const Task& task) {
  for (std::size_t k = 0; k < config.operators.size(); ++k) {
    const BuiltOperator& op = config.operators[k];
    if (!op.enabled || op.weight <= 0.0 || !op.op->applicable(task)) continue;   // never asked for this task
    try {
      op.op->prepare(task);
    } catch (const InputError& e) {
      throw InputError(e.file(), e.key(),
                       fmt::format("{} (for operator /operators/{} '{}' on task '{}' of backend '{}')", e.expected(),
                                   k, op.type, task.name, task.backend));
    }
  }
}


}  // namespace kevo::engine
