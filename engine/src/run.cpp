#include "kevo/engine/run.hpp"

#include "kevo/core/error.hpp"
#include "kevo/engine/lineage_sink.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <set>

namespace kevo::engine {
namespace fs = std::filesystem;

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

namespace {

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

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
  std::string header = fmt::format(
      "// kevo: best candidate for task '{}'\n// id {}  operator {}  speedup {:.3f}x over the reference"
      "  (median {:.1f} us vs {:.1f} us)\n",
      task.name, c.id, c.op, c.verdict.speedup, c.verdict.cand_median_ns / 1e3, c.verdict.ref_median_ns / 1e3);
  if (!c.params_json.empty()) header += "// parameters " + c.params_json + "\n";
  return header + c.source;
}

nlohmann::json record_baselines(const BaselineHook& hook, const std::vector<std::shared_ptr<const Task>>& tasks,
                                std::uint64_t seed, const fs::path& run_dir, std::FILE* log) {
  if (!hook) return nullptr;
  nlohmann::json doc;
  try {
    doc = hook(tasks, seed);
  } catch (const std::exception& e) {
    // Baselines are context for the report, not part of the search: losing
    // them must not lose the run.
    doc = {{"format", "kevo-baselines/1"}, {"measured", false},
           {"note", std::string("measuring failed: ") + e.what()}, {"tasks", nlohmann::json::object()}};
    if (log) fmt::print(log, "kevo: library baselines: {}\n", doc["note"].get<std::string>());
  }
  write_file(run_dir / "baselines.json", doc.dump(2) + "\n");
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
  for (const auto& t : tasks) config.backend->prepare(*t);
  return tasks;
}


}  // namespace kevo::engine
