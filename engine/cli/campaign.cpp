#include "campaign.hpp"
#include "commands.hpp"

#include "kevo/app/plugins.hpp"
#include "kevo/core/process.hpp"
#include "kevo/core/error.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/core/task.hpp"
#include "kevo/core/text.hpp"
#include "kevo/engine/config.hpp"
#include "kevo/engine/run.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace kevo::app {
namespace fs = std::filesystem;

namespace {

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

nlohmann::json read_json_or_null(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return nullptr;
  return nlohmann::json::parse(in, nullptr, false);
}

// Written then renamed (engine::write_file): a reader never sees half of it.
void write_json_atomic(const fs::path& p, const nlohmann::json& j) { engine::write_file(p, dump_json(j, 2) + "\n"); }

std::string kevo_executable() {
  const fs::path p = kevo::self_executable();
  if (p.empty()) throw Failure("cannot find the kevo executable (/proc/self/exe)");
  return p.string();
}

std::string tail_lines(const fs::path& p, std::size_t n) {
  std::ifstream in(p);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > n) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return sanitize_utf8(out, kShownText);
}

}  // namespace

nlohmann::json Campaign::to_json() const {
  nlohmann::json confs = nlohmann::json::array();
  for (const auto& c : configurations)
    confs.push_back({{"name", c.name}, {"description", c.description}, {"set", c.sets}});
  nlohmann::json cs = nlohmann::json::array();
  for (const auto& c : cells)
    cs.push_back({{"id", c.id}, {"configuration", c.configuration}, {"seed", c.seed}, {"run_dir", c.run_dir},
                  {"overrides", c.overrides}});
  nlohmann::json t = nlohmann::json::array();
  for (const auto& p : tasks) t.push_back(p.string());
  nlohmann::json kb = nlohmann::json::array();
  for (const auto& k : kernelbench)
    kb.push_back({{"level", k.level.string()}, {"out", k.out.string()}, {"only", k.only}, {"max_mb", k.max_mb},
                  {"tasks", k.tasks}, {"left_out", k.left_out}});
  return {{"name", name},
          {"file", file},
          {"base_config", base_config.string()},
          {"tasks", t},
          {"kernelbench", kb},
          {"configurations", confs},
          {"seeds", seeds},
          {"budget", {{"evaluations_per_task", evaluations_per_task}, {"wall_seconds", wall_seconds},
                      {"llm_usd", llm_usd}}},
          {"jobs", jobs},
          {"slurm", {{"ranks", slurm.ranks}, {"cpus_per_task", slurm.cpus_per_task},
                     {"gpus_per_task", slurm.gpus_per_task}, {"time", slurm.time}, {"partition", slurm.partition},
                     {"signal_seconds", slurm.signal_seconds}, {"max_parallel", slurm.max_parallel},
                     {"extra", slurm.extra}}},
          {"cells", cs}};
}

namespace {

// A word for the batch script's shell, whatever it holds: in single
// quotes, each ' written as '\''.
std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') out += "'\\''";
    else out += ch;
  }
  return out + "'";
}

// The importer's stamp: what a reuse must match.
nlohmann::json import_key(const KernelBenchSuite& s) {
  return {{"level", s.level.string()}, {"only", s.only}, {"max_mb", s.max_mb}};
}

// Imports the suite's level into s.out unless an import with the same
// key is there, then fills s.tasks (the degenerate ones left out: null
// candidates would pass them, docs/torch.md#degenerate-tasks).
void import_suite(KernelBenchSuite& s, const std::string& file, const std::string& ptr) {
  const fs::path stamp = s.out / "kevo-import.json";
  nlohmann::json done = read_json_or_null(stamp);
  if (done.is_object()) {
    if (done.value("key", nlohmann::json()) != import_key(s))
      throw InputError(file, ptr + "/out",
                       "a folder for this suite's tasks (" + s.out.string() + " holds an import of " +
                           done.value("key", nlohmann::json()).dump() + ": remove it or choose another out)");
  } else {
    if (fs::exists(s.out))
      throw InputError(file, ptr + "/out",
                       "a folder kevo creates, or one that holds this suite's import (" + s.out.string() +
                           " exists and has no kevo-import.json)");
    // Written beside, renamed when complete: a cut import leaves no folder
    // that looks finished.
    const fs::path partial = s.out.string() + ".importing";
    fs::remove_all(partial);
    fs::create_directories(partial.parent_path());
    std::fprintf(stderr, "kevo: importing the KernelBench problems of %s into %s\n", s.level.string().c_str(),
                 s.out.string().c_str());
    // Its report goes to stderr: `campaign plan --json` keeps stdout.
    const int rc = cmd_import_kernelbench(
        {.level_dir = s.level.string(), .out = partial.string(), .python = s.python, .max_mb = s.max_mb, .only = s.only,
         .stdout_fd = 2});
    if (rc != 0 && rc != 1) {
      fs::remove_all(partial);
      throw InputError(file, ptr + "/level",
                       "a KernelBench level folder that " + s.python + " can import (the importer exited " +
                           std::to_string(rc) + "; its report is above)");
    }
    nlohmann::json names = nlohmann::json::array();
    if (fs::is_directory(partial))
      for (const auto& e : fs::directory_iterator(partial))
        if (e.is_directory() && fs::exists(e.path() / "task.json")) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    done = {{"key", import_key(s)}, {"importer_exit", rc}, {"tasks", names}};
    fs::create_directories(partial);
    write_json_atomic(partial / "kevo-import.json", done);
    fs::rename(partial, s.out);
  }
  for (const auto& n : done.value("tasks", nlohmann::json::array())) {
    const fs::path dir = s.out / n.get<std::string>();
    const Task t = load_task(dir.string());
    if (t.torch && t.torch->degenerate) s.left_out.push_back(n.get<std::string>() + ": degenerate");
    else s.tasks.push_back(dir.string());
  }
  if (done.value("importer_exit", 0) == 1) s.left_out.push_back("some problems refused by the importer (its report)");
  if (s.tasks.empty())
    throw InputError(file, ptr + "/level",
                     "a KernelBench level with at least one problem kevo can judge (" + s.out.string() +
                         " holds none that is not degenerate)");
}

}  // namespace

Campaign load_campaign(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  StrictObject o(doc, path, "");
  Campaign c;
  c.file = path;
  const fs::path base_dir = fs::absolute(fs::path(path)).parent_path();
  auto resolve = [&](const std::string& s) { return fs::weakly_canonical(base_dir / s); };

  c.name = o.string("name");
  if (!valid_name(c.name)) o.fail("name", "a name of letters, digits, '_' and '-' (at most 64)");
  const std::string base = o.string("base_config");
  c.base_config = resolve(base);
  if (!fs::is_regular_file(c.base_config))
    throw InputError(path, "/base_config", "a config file (relative to the campaign file; " +
                                               c.base_config.string() + " does not exist)");
  for (const auto& t : o.strings("tasks", std::vector<std::string>{})) {
    const fs::path p = resolve(t);
    if (!fs::is_directory(p))
      throw InputError(path, "/tasks", "task folders that exist (relative to the campaign file; " + p.string() +
                                           " is not a folder)");
    c.tasks.push_back(p);
  }
  if (const nlohmann::json* kb = o.find("kernelbench")) {
    if (!kb->is_array() || kb->empty())
      o.fail("kernelbench", "a list of KernelBench suites ({\"level\": folder, \"out\": folder}), at least one");
    for (std::size_t i = 0; i < kb->size(); ++i) {
      const std::string ptr = "/kernelbench/" + std::to_string(i);
      StrictObject ko((*kb)[i], path, ptr);
      KernelBenchSuite s;
      s.level = resolve(ko.string("level"));
      s.out = resolve(ko.string("out"));
      s.only = ko.string("only", "");
      if (s.only.find_first_not_of("0123456789,") != std::string::npos)
        ko.fail("only", "problem numbers separated by commas (\"1,23,40\")");
      s.max_mb = ko.number("max_mb", 256.0);
      if (!(s.max_mb > 0)) ko.fail("max_mb", "a working-set limit in MB above 0");
      s.python = ko.string("python", "");
      ko.finish();
      if (!fs::is_directory(s.level))
        throw InputError(path, ptr + "/level", "a KernelBench level folder (relative to the campaign file; " +
                                                   s.level.string() + " is not a folder)");
      c.kernelbench.push_back(std::move(s));
    }
  }

  const nlohmann::json& confs = o.at("configurations");
  if (!confs.is_object() || confs.empty())
    throw InputError(path, "/configurations", "an object of named configurations, at least one");
  for (const auto& [name, value] : confs.items()) {
    const std::string ptr = "/configurations/" + name;
    if (!valid_name(name)) throw InputError(path, ptr, "a name of letters, digits, '_' and '-' (at most 64)");
    StrictObject co(value, path, ptr);
    CampaignConfiguration conf;
    conf.name = name;
    conf.description = co.string("description", "");
    if (const nlohmann::json* set = co.find("set")) {
      if (!set->is_object()) co.fail("set", "an object of config keys (\"budget.wall_seconds\") and their values");
      for (const auto& [key, v] : set->items()) {
        if (key.empty() || key.find('=') != std::string::npos)
          throw InputError(path, ptr + "/set", "config keys such as \"operators.0.weight\" (got \"" + key + "\")");
        conf.sets.push_back(key + "=" + v.dump());
      }
    }
    co.finish();
    c.configurations.push_back(std::move(conf));
  }

  const nlohmann::json& seeds = o.at("seeds");
  if (!seeds.is_array() || seeds.empty()) throw InputError(path, "/seeds", "a list of seeds (positive integers), at least one");
  std::set<std::uint64_t> seen;
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    const auto& s = seeds[i];
    if (!s.is_number_integer() || s.get<std::int64_t>() < 1)
      throw InputError(path, "/seeds/" + std::to_string(i), "a positive integer");
    if (!seen.insert(s.get<std::uint64_t>()).second)
      throw InputError(path, "/seeds/" + std::to_string(i), "a seed not listed before");
    c.seeds.push_back(s.get<std::uint64_t>());
  }

  if (auto b = o.optional_object("budget")) {
    if (b->has("evaluations_per_task")) c.evaluations_per_task = b->integer("evaluations_per_task", std::nullopt, 1);
    if (b->has("wall_seconds")) {
      c.wall_seconds = b->number("wall_seconds");
      if (!(c.wall_seconds > 0)) b->fail("wall_seconds", "a number of seconds above 0");
    }
    if (b->has("llm_usd")) {
      c.llm_usd = b->number("llm_usd");
      if (!(c.llm_usd > 0)) b->fail("llm_usd", "a number of USD above 0");
    }
    b->allow("evaluations_per_task");
    b->allow("wall_seconds");
    b->allow("llm_usd");
    b->finish();
  }
  if (auto l = o.optional_object("local")) {
    c.jobs = static_cast<int>(l->integer("jobs", 1, 1, 256));
    l->finish();
  }
  if (auto sl = o.optional_object("slurm")) {
    c.slurm.ranks = static_cast<int>(sl->integer("ranks", 1, 1, 4096));
    c.slurm.cpus_per_task = static_cast<int>(sl->integer("cpus_per_task", 2, 1, 1024));
    c.slurm.gpus_per_task = static_cast<int>(sl->integer("gpus_per_task", 0, 0, 64));
    c.slurm.time = sl->string("time", "01:00:00");
    if (c.slurm.time.empty() || c.slurm.time.find_first_not_of("0123456789:-") != std::string::npos)
      sl->fail("time", "a Slurm time limit such as \"01:00:00\" or \"1-00:00:00\"");
    c.slurm.partition = sl->string("partition", "");
    // Written into the batch script's #SBATCH line: a Slurm name list, no
    // newline or shell text.
    if (c.slurm.partition.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.,-") !=
        std::string::npos)
      sl->fail("partition", "a Slurm partition name, or names separated by commas (letters, digits, _ . -)");
    c.slurm.signal_seconds = static_cast<int>(sl->integer("signal_seconds", 120, 10, 86400));
    c.slurm.max_parallel = static_cast<int>(sl->integer("max_parallel", 0, 0, 100000));
    c.slurm.extra = sl->strings("extra", std::vector<std::string>{});
    for (const auto& e : c.slurm.extra)
      if (e.rfind("--", 0) != 0 || e.find('\n') != std::string::npos)
        sl->fail("extra", "sbatch options, each starting with -- (\"--account=x\")");
    sl->finish();
  }
  c.out_dir = o.string("out_dir", "campaigns");
  o.finish();

  const nlohmann::json base_doc = read_json_file(c.base_config.string());
  if (c.llm_usd > 0 && !(base_doc.is_object() && base_doc.contains("llm")))
    throw InputError(path, "/budget/llm_usd", "a base config with an llm section (" + c.base_config.string() +
                                                  " has none)");
  // The suites' tasks join the campaign's (the importer runs with the base
  // config's torch interpreter unless the suite names one).
  for (std::size_t i = 0; i < c.kernelbench.size(); ++i) {
    KernelBenchSuite& s = c.kernelbench[i];
    if (s.python.empty()) {
      const nlohmann::json::json_pointer at("/backend/torch/python");
      const nlohmann::json py = base_doc.is_object() && base_doc.contains(at) ? base_doc.at(at) : nlohmann::json();
      s.python = py.is_string() ? py.get<std::string>() : "python3";
    }
    import_suite(s, path, "/kernelbench/" + std::to_string(i));
    for (const auto& t : s.tasks) c.tasks.push_back(t);
  }

  // The cells, and each configuration checked as `kevo run` checks a
  // config (the seed does not change what is valid).
  for (auto& conf : c.configurations) {
    std::vector<std::string> common;
    if (!c.tasks.empty()) {
      nlohmann::json t = nlohmann::json::array();
      for (const auto& p : c.tasks) t.push_back(p.string());
      common.push_back("tasks=" + t.dump());
    }
    if (c.evaluations_per_task > 0) common.push_back(fmt::format("budget.evaluations_per_task={}", c.evaluations_per_task));
    if (c.wall_seconds > 0) common.push_back("budget.wall_seconds=" + nlohmann::json(c.wall_seconds).dump());
    if (c.llm_usd > 0) common.push_back("llm.budget.usd=" + nlohmann::json(c.llm_usd).dump());
    for (const auto& s : conf.sets) common.push_back(s);
    for (std::size_t k = 0; k < c.seeds.size(); ++k) {
      CampaignCell cell;
      cell.configuration = conf.name;
      cell.seed = c.seeds[k];
      cell.id = fmt::format("{}.s{}", conf.name, cell.seed);
      cell.run_dir = "cells/" + cell.id;
      cell.overrides.push_back(fmt::format("seed={}", cell.seed));
      cell.overrides.insert(cell.overrides.end(), common.begin(), common.end());
      if (k == 0) {
        try {
          const engine::Config cfg = engine::load_config(c.base_config.string(), cell.overrides, checking_plugins());
          conf.tasks = cfg.task_dirs.size();
          conf.evaluations_per_task = cfg.budget.evaluations_per_task;
          conf.wall_seconds = cfg.budget.wall_seconds;
          if (cfg.effective.contains("llm")) conf.llm_usd = cfg.effective["llm"]["budget"].value("usd", 0.0);
          conf.backend = cfg.backend_type;
        } catch (const InputError& e) {
          throw InputError(path, "/configurations/" + conf.name,
                           "a configuration that " + c.base_config.filename().string() + " accepts with its --set (" +
                               e.what() + ")");
        }
      }
      c.cells.push_back(std::move(cell));
    }
  }
  return c;
}

// ---- plan -----------------------------------------------------------------------

int cmd_campaign_plan(const CampaignPlanArgs& args) {
  const Campaign c = load_campaign(args.file);
  // The tasks and budgets of each configuration, as its run will see them.
  nlohmann::json cells = nlohmann::json::array();
  double total_wall = 0.0, total_usd = 0.0;
  std::int64_t total_evals = 0;
  std::map<std::string, const CampaignConfiguration*> conf_of;
  for (const auto& conf : c.configurations) conf_of[conf.name] = &conf;
  for (const auto& cell : c.cells) {
    const CampaignConfiguration& p = *conf_of.at(cell.configuration);
    const std::int64_t evals = static_cast<std::int64_t>(p.tasks) * p.evaluations_per_task;
    total_evals += evals;
    total_wall += p.wall_seconds;
    total_usd += p.llm_usd;
    cells.push_back({{"id", cell.id}, {"configuration", cell.configuration}, {"seed", cell.seed},
                     {"tasks", p.tasks}, {"evaluations", evals}, {"wall_seconds", p.wall_seconds},
                     {"llm_usd", p.llm_usd}, {"backend", p.backend}});
  }
  const bool unbounded = std::any_of(cells.begin(), cells.end(),
                                     [](const nlohmann::json& x) { return x["wall_seconds"].get<double>() <= 0; });
  if (args.json) {
    fmt::print("{}\n", dump_json({{"campaign", c.to_json()},
                                  {"plan", cells},
                                  {"total", {{"cells", cells.size()}, {"evaluations", total_evals},
                                             {"wall_seconds_at_most", unbounded ? nlohmann::json(nullptr)
                                                                                 : nlohmann::json(total_wall)},
                                             {"jobs", c.jobs}, {"llm_usd_at_most", total_usd}}}},
                                 2));
    return 0;
  }
  fmt::print("campaign {} ({}): {} configuration(s) x {} seed(s) = {} cells, base {}\n", c.name, args.file,
             c.configurations.size(), c.seeds.size(), c.cells.size(), c.base_config.string());
  fmt::print("{:<28} {:<16} {:>5} {:>6} {:>12} {:>10} {:>9}\n", "cell", "configuration", "seed", "tasks",
             "evaluations", "wall (s)", "LLM USD");
  for (const auto& x : cells)
    fmt::print("{:<28} {:<16} {:>5} {:>6} {:>12} {:>10} {:>9.2f}\n", x["id"].get<std::string>(),
               x["configuration"].get<std::string>(), x["seed"].get<std::uint64_t>(), x["tasks"].get<std::size_t>(),
               x["evaluations"].get<std::int64_t>(),
               x["wall_seconds"].get<double>() > 0 ? fmt::format("{:.0f}", x["wall_seconds"].get<double>()) : "-",
               x["llm_usd"].get<double>());
  fmt::print("total: {} evaluations; wall time at most {} ({} cell(s) at once on this machine); LLM spend at most "
             "{:.2f} USD{}\n",
             total_evals,
             unbounded ? std::string("unbounded (a cell has no wall_seconds)")
                       : fmt::format("{:.0f} s", total_wall / std::max(1, c.jobs)),
             c.jobs, total_usd, total_usd == 0.0 ? " (no LLM budget set, or no LLM)" : "");
  return 0;
}

// ---- run ------------------------------------------------------------------------

namespace {

struct CellState {
  std::string state = "pending";   // pending, running, done, failed
  nlohmann::json exit_code = nullptr;
  std::string error;
  int attempts = 0;
  nlohmann::json started = nullptr, finished = nullptr;
  bool cut = false;                // stopped before its budget: resumed on the next run
  std::string note;

  nlohmann::json to_json() const {
    return {{"state", state}, {"exit_code", exit_code}, {"error", error}, {"attempts", attempts},
            {"started", started}, {"finished", finished}, {"cut", cut}, {"note", note}};
  }
  static CellState from_json(const nlohmann::json& j) {
    CellState s;
    if (!j.is_object()) return s;
    s.state = j.value("state", "pending");
    s.exit_code = j.value("exit_code", nlohmann::json(nullptr));
    s.error = j.value("error", "");
    s.attempts = j.value("attempts", 0);
    s.started = j.value("started", nlohmann::json(nullptr));
    s.finished = j.value("finished", nlohmann::json(nullptr));
    s.cut = j.value("cut", false);
    s.note = j.value("note", "");
    return s;
  }
};

// A run directory's own verdict on itself: "done" (report.json, not
// stopped, or stopped by its LLM budget, which a resume would not change),
// "cut" (stopped, or a checkpoint without a report: `kevo resume`), or ""
// (no run there).
std::string run_state(const fs::path& run_dir, std::string* note = nullptr) {
  const nlohmann::json r = read_json_or_null(run_dir / "report.json");
  if (r.is_object()) {
    if (!r.value("stopped", false)) return "done";
    const std::string why = r.value("stop_reason", "");
    if (why.rfind("llm budget", 0) == 0) {
      if (note) *note = "stopped by its LLM budget: " + why;
      return "done";
    }
    return "cut";
  }
  if (fs::exists(run_dir / "checkpoint")) return "cut";
  return "";
}

// Holds DIR/campaign.lock (flock) for the runner's lifetime.
class DirLock {
 public:
  explicit DirLock(const fs::path& p) {
    fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Failure("cannot open " + p.string());
    held_ = ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  bool held() const { return held_; }

 private:
  int fd_ = -1;
  bool held_ = false;
};

// Starts `argv` (argv[0] by path or from PATH) with stdout on `out_fd`
// (-1: this process's; else stdin from /dev/null), stderr too when
// `with_stderr`, in a process group of its own when `own_group`.
pid_t start_process(const std::vector<std::string>& argv, int out_fd, bool with_stderr, bool own_group) {
  std::vector<char*> a;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw Failure("fork failed");
  if (pid == 0) {
    if (own_group) ::setpgid(0, 0);
    if (out_fd >= 0) {
      ::dup2(out_fd, 1);
      if (with_stderr) ::dup2(out_fd, 2);
      const int null = ::open("/dev/null", O_RDONLY);
      if (null >= 0) ::dup2(null, 0);
    }
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::execvp(a[0], a.data());
    std::fprintf(stderr, "kevo: failure: cannot run %s\n", a[0]);
    std::_Exit(127);
  }
  return pid;
}

// Its exit code (128 + the signal that ended it).
int wait_process(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A cell's kevo, its output appended to `log`. A process group of its own:
// a Ctrl-C reaches the campaign, which forwards one stop (a second signal
// would stop the cell at once).
pid_t spawn_cell(const std::vector<std::string>& argv, const fs::path& log) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw Failure("cannot open " + log.string());
  pid_t pid = -1;
  try {
    pid = start_process(argv, fd, true, true);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return pid;
}


// The campaign directory for `c`: made (campaign.json written) or, when it
// exists, checked to hold this campaign. Throws InputError otherwise.
void prepare_directory(const Campaign& c, const fs::path& dir, const std::string& file) {
  nlohmann::json plan = c.to_json();
  if (fs::exists(dir / "campaign.json")) {
    nlohmann::json old = read_json_or_null(dir / "campaign.json");
    nlohmann::json a = plan, b = old;
    if (b.is_object()) {
      for (auto* j : {&a, &b}) {
        j->erase("file");
        j->erase("jobs");
        j->erase("slurm");
      }
    }
    if (!old.is_object() || a != b)
      throw InputError((dir / "campaign.json").string(), "",
                       "the campaign of " + file + " (this directory holds another campaign, or one whose file "
                       "changed: use another --out)");
  } else if (fs::exists(dir) && !fs::is_empty(dir)) {
    throw InputError(dir.string(), "", "a new or empty directory, or one of this campaign (no campaign.json here)");
  }
  fs::create_directories(dir / "status");
  fs::create_directories(dir / "logs");
  fs::create_directories(dir / "cells");
  if (!fs::exists(dir / "campaign.json")) write_json_atomic(dir / "campaign.json", plan);
}

fs::path status_path(const fs::path& dir, const std::string& id) { return dir / "status" / (id + ".json"); }

CellState load_state(const fs::path& dir, const std::string& id) {
  return CellState::from_json(read_json_or_null(status_path(dir, id)));
}

// Starts one cell's `kevo run` (or `kevo resume` where it was cut), its
// output appended to DIR/logs/<cell>.log, `launcher` (srun) before kevo;
// marks it running.
pid_t launch_cell(const fs::path& dir, const fs::path& base_config, const CampaignCell& cell, CellState& s,
                  const std::string& exe, const std::vector<std::string>& launcher) {
  const fs::path run_dir = dir / cell.run_dir;
  std::vector<std::string> argv = launcher;
  argv.push_back(exe);
  if (run_state(run_dir) == "cut") {
    argv.insert(argv.end(), {"resume", run_dir.string()});
  } else {
    if (fs::exists(run_dir)) {
      // A run that failed before its first checkpoint: kept aside.
      const fs::path aside = run_dir.string() + fmt::format(".attempt-{}", s.attempts);
      fs::remove_all(aside);
      fs::rename(run_dir, aside);
    }
    argv.insert(argv.end(), {"run", base_config.string(), "--out", run_dir.string()});
    for (const auto& o : cell.overrides) argv.insert(argv.end(), {"--set", o});
  }
  const fs::path log = dir / "logs" / (cell.id + ".log");
  {
    std::ofstream l(log, std::ios::app);
    std::string cmd;
    for (std::size_t k = launcher.size() + 1; k < argv.size(); ++k) cmd += (cmd.empty() ? "" : " ") + argv[k];
    l << fmt::format("=== attempt {}: kevo {}\n", s.attempts + 1, cmd);
  }
  const pid_t pid = spawn_cell(argv, log);
  s.state = "running";
  s.attempts += 1;
  s.started = now_seconds();
  s.finished = nullptr;
  s.exit_code = nullptr;
  s.error.clear();
  write_json_atomic(status_path(dir, cell.id), s.to_json());
  return pid;
}

// A cell's state after its process ended (wait status `status`): done,
// cut (pending, resumed next time) or failed with its log's last lines.
void settle_cell(const fs::path& dir, const CampaignCell& cell, CellState& s, int status, bool stopped) {
  s.finished = now_seconds();
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  s.exit_code = code;
  std::string note;
  const std::string rs = run_state(dir / cell.run_dir, &note);
  if (rs == "done" && code == 0) {
    s.state = "done";
    s.cut = false;
    s.note = note;
  } else if (rs == "cut" && (code == 0 || stopped)) {
    s.state = "pending";
    s.cut = true;
  } else {
    s.state = "failed";
    s.error = tail_lines(dir / "logs" / (cell.id + ".log"), 12);
  }
  write_json_atomic(status_path(dir, cell.id), s.to_json());
}

}  // namespace

int cmd_campaign_run(const CampaignRunArgs& args, const std::atomic<int>& stop) {
  const Campaign c = load_campaign(args.file);
  const fs::path dir = args.out.empty() ? fs::path(c.out_dir) / c.name : fs::path(args.out);
  const int jobs = args.jobs > 0 ? args.jobs : c.jobs;
  prepare_directory(c, dir, args.file);
  DirLock lock(dir / "campaign.lock");
  if (!lock.held()) throw Failure(dir.string() + " is in use by another `kevo campaign run`");

  const std::string exe = kevo_executable();
  std::map<std::string, CellState> states;
  std::deque<const CampaignCell*> queue;
  int done_before = 0;
  for (const auto& cell : c.cells) {
    CellState s = load_state(dir, cell.id);
    const std::string rs = run_state(dir / cell.run_dir, &s.note);
    if (rs == "done") {
      if (s.state != "done") {
        s.state = "done";
        s.error.clear();
        write_json_atomic(status_path(dir, cell.id), s.to_json());
      }
      ++done_before;
    } else {
      // A runner that died left "running": the cell is cut.
      if (s.state == "running") s.cut = true;
      s.state = "pending";
      write_json_atomic(status_path(dir, cell.id), s.to_json());
      queue.push_back(&cell);
    }
    states[cell.id] = s;
  }
  fmt::print("campaign {}: {} cells, {} done before, {} to run, {} at once; directory {}\n", c.name, c.cells.size(),
             done_before, queue.size(), jobs, dir.string());
  std::fflush(stdout);

  std::map<pid_t, const CampaignCell*> running;
  bool forwarded = false;
  int failed = 0, cut = 0;
  while (!queue.empty() || !running.empty()) {
    if (stop.load() > 0 && !forwarded) {
      forwarded = true;
      for (const auto& [pid, cell] : running) ::kill(pid, SIGTERM);
      fmt::print("campaign: stop signal: {} running cell(s) told to stop; they resume on the next run\n",
                 running.size());
      std::fflush(stdout);
    }
    while (!forwarded && static_cast<int>(running.size()) < jobs && !queue.empty()) {
      const CampaignCell& cell = *queue.front();
      queue.pop_front();
      CellState& s = states[cell.id];
      const bool resume = run_state(dir / cell.run_dir) == "cut";
      running[launch_cell(dir, c.base_config, cell, s, exe, {})] = &cell;
      fmt::print("campaign: {} started ({}, attempt {})\n", cell.id, resume ? "resume" : "run", s.attempts);
      std::fflush(stdout);
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const CampaignCell& cell = *it->second;
    running.erase(it);
    CellState& s = states[cell.id];
    settle_cell(dir, cell, s, status, forwarded);
    cut += s.state == "pending";
    failed += s.state == "failed";
    fmt::print("campaign: {} {} (exit {}){}\n", cell.id, s.state == "pending" ? "cut" : s.state,
               s.exit_code.get<int>(),
               s.state == "failed" ? ": see " + (dir / "logs" / (cell.id + ".log")).string() : "");
    std::fflush(stdout);
  }
  int done = 0, cut_now = 0, pending = 0;
  for (const auto& [id, s] : states) {
    done += s.state == "done";
    cut_now += s.state == "pending" && s.cut;
    pending += s.state == "pending" && !s.cut;
  }
  fmt::print("campaign {}: {} of {} cells done, {} failed, {} cut, {} not started\n", c.name, done, c.cells.size(),
             failed, cut_now, pending);
  if (forwarded || cut > 0) return 4;
  return failed > 0 ? 1 : 0;
}

// ---- one cell, and Slurm -------------------------------------------------------

int cmd_campaign_cell(const CampaignCellArgs& args, const std::atomic<int>& stop) {
  const fs::path dir = args.dir;
  const nlohmann::json plan = read_json_or_null(dir / "campaign.json");
  if (!plan.is_object() || !plan.contains("cells") || !plan.contains("base_config"))
    throw InputError((dir / "campaign.json").string(), "", "a campaign directory (made by kevo campaign run or sbatch)");
  CampaignCell cell;
  bool found = false;
  for (const auto& j : plan["cells"])
    if (j.value("id", "") == args.id) {
      cell.id = args.id;
      cell.run_dir = j.value("run_dir", "");
      cell.overrides = j.value("overrides", std::vector<std::string>{});
      found = true;
    }
  if (!found) throw InputError((dir / "campaign.json").string(), "/cells", "a cell named " + args.id);
  DirLock lock(dir / "status" / (cell.id + ".lock"));
  if (!lock.held()) throw Failure("cell " + cell.id + " is being run by another process");
  CellState s = load_state(dir, cell.id);
  if (run_state(dir / cell.run_dir, &s.note) == "done") {
    s.state = "done";
    write_json_atomic(status_path(dir, cell.id), s.to_json());
    fmt::print("campaign cell {}: done before\n", cell.id);
    return 0;
  }
  std::vector<std::string> launcher;
  if (args.ranks > 1) {
    const char* mpi = std::getenv("KEVO_SRUN_MPI");
    launcher = {"srun", std::string("--mpi=") + (mpi && *mpi ? mpi : "pmix"), "--kill-on-bad-exit=0"};
  }
  const pid_t pid = launch_cell(dir, plan["base_config"].get<std::string>(), cell, s, kevo_executable(), launcher);
  fmt::print("campaign cell {}: started (attempt {})\n", cell.id, s.attempts);
  std::fflush(stdout);
  bool forwarded = false;
  int status = 0;
  for (;;) {
    if (stop.load() > 0 && !forwarded) {
      forwarded = true;
      // srun passes SIGUSR1 on to every rank of its step; a single kevo
      // stops on it as on SIGTERM.
      ::kill(pid, SIGUSR1);
    }
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  settle_cell(dir, cell, s, status, forwarded);
  fmt::print("campaign cell {}: {} (exit {})\n", cell.id, s.state == "pending" ? "cut" : s.state,
             s.exit_code.get<int>());
  if (s.state == "done") return 0;
  return s.state == "pending" ? 4 : 1;
}

int cmd_campaign_sbatch(const CampaignSbatchArgs& args) {
  const Campaign c = load_campaign(args.file);
  const fs::path dir = fs::absolute(args.out.empty() ? fs::path(c.out_dir) / c.name : fs::path(args.out));
  // The directory is named in #SBATCH --output, which no quoting reaches.
  if (dir.string().find_first_of("\n\r") != std::string::npos)
    throw InputError("--out", "", "a campaign directory whose path holds no line break (it is written into the "
                                  "batch script's #SBATCH lines)");
  prepare_directory(c, dir, args.file);
  fs::create_directories(dir / "slurm");
  std::vector<std::string> indices;
  std::string cells;
  for (std::size_t k = 0; k < c.cells.size(); ++k) {
    cells += c.cells[k].id + "\n";
    if (run_state(dir / c.cells[k].run_dir) != "done") indices.push_back(std::to_string(k));
  }
  {
    std::ofstream out(dir / "slurm" / "cells.txt", std::ios::trunc);
    out << cells;
  }
  const Campaign::Slurm& sl = c.slurm;
  std::string script = "#!/usr/bin/env bash\n";
  script += "# kevo campaign " + c.name + ": one cell per array index (slurm/cells.txt, from 0), written by\n";
  script += "# `kevo campaign sbatch` (docs/campaigns.md). Before the time limit Slurm sends SIGUSR1 to\n";
  script += "# this shell, which passes it to the cell: its run checkpoints and stops, the array task\n";
  script += "# requeues itself and the next start resumes the cell.\n";
  script += "#SBATCH --job-name=kevo-" + c.name + "\n";
  script += fmt::format("#SBATCH --ntasks={}\n#SBATCH --cpus-per-task={}\n", sl.ranks, sl.cpus_per_task);
  if (sl.gpus_per_task > 0) script += fmt::format("#SBATCH --gpus-per-task={}\n", sl.gpus_per_task);
  script += "#SBATCH --time=" + sl.time + "\n";
  if (!sl.partition.empty()) script += "#SBATCH --partition=" + sl.partition + "\n";
  script += "#SBATCH --signal=B:USR1@" + std::to_string(sl.signal_seconds) + "\n";
  script += "#SBATCH --requeue\n#SBATCH --open-mode=append\n";
  script += "#SBATCH --output=" + (dir / "logs" / "slurm-%A_%a.out").string() + "\n";
  script += "set -uo pipefail\n";
  script += "kevo=" + shell_quoted(kevo_executable()) + "\n";
  script += "dir=" + shell_quoted(dir.string()) + "\n";
  script += "cell=\"$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" \"$dir/slurm/cells.txt\")\"\n";
  script += "stopping=0\n";
  script += "trap 'stopping=1; [ -n \"${pid:-}\" ] && kill -USR1 \"$pid\" 2>/dev/null' USR1\n";
  script += "echo \"campaign.sbatch: job ${SLURM_ARRAY_JOB_ID:-?}_${SLURM_ARRAY_TASK_ID} restart ${SLURM_RESTART_COUNT:-0}: cell $cell\"\n";
  script += fmt::format("\"$kevo\" campaign cell \"$dir\" \"$cell\" --ranks {} &\n", sl.ranks);
  script += "pid=$!\n";
  script += "[ \"$stopping\" = 1 ] && kill -USR1 \"$pid\" 2>/dev/null\n";
  script += "rc=0\nwhile kill -0 \"$pid\" 2>/dev/null; do wait \"$pid\"; rc=$?; done\n";
  script += "wait \"$pid\" 2>/dev/null; last=$?; [ \"$last\" -ne 127 ] && rc=$last\n";
  script += "echo \"campaign.sbatch: cell $cell exited $rc\"\n";
  script += "if [ \"$stopping\" = 1 ] || [ \"$rc\" = 4 ]; then\n";
  script += "  scontrol requeue \"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}\"\n  exit 0\nfi\n";
  script += "exit \"$rc\"\n";
  const fs::path script_path = dir / "slurm" / "campaign.sbatch";
  {
    std::ofstream out(script_path, std::ios::trunc);
    out << script;
  }
  fs::permissions(script_path, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  if (indices.empty()) {
    fmt::print("campaign {}: every cell is done; nothing to submit\n", c.name);
    return 0;
  }
  std::string array;
  for (const auto& i : indices) array += (array.empty() ? "" : ",") + i;
  if (sl.max_parallel > 0) array += "%" + std::to_string(sl.max_parallel);
  std::vector<std::string> argv = {"sbatch", "--parsable", "--array=" + array, "--chdir=" + dir.string()};
  argv.insert(argv.end(), sl.extra.begin(), sl.extra.end());
  argv.push_back(script_path.string());
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (args.no_submit) {
    fmt::print("campaign {}: {} of {} cells to submit; the command:\n{}\n", c.name, indices.size(), c.cells.size(), cmd);
    return 0;
  }
  // sbatch --parsable prints "JOBID[;CLUSTER]" on stdout.
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw Failure("pipe failed");
  pid_t pid = -1;
  try {
    pid = start_process(argv, pipefd[1], false, false);
  } catch (...) {
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    throw;
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(pipefd[0]);
  if (wait_process(pid) != 0) throw Failure("sbatch failed (is Slurm installed and reachable?): " + cmd + "\n" + out);
  const std::string job = out.substr(0, out.find_first_of(";\n"));
  nlohmann::json jobs = read_json_or_null(dir / "slurm" / "jobs.json");
  if (!jobs.is_array()) jobs = nlohmann::json::array();
  jobs.push_back({{"job", job}, {"array", array}, {"submitted", now_seconds()}});
  write_json_atomic(dir / "slurm" / "jobs.json", jobs);
  fmt::print("campaign {}: submitted job array {} ({} cell(s): --array={})\n", c.name, job, indices.size(), array);
  return 0;
}

// ---- status ---------------------------------------------------------------------

int cmd_campaign_status(const CampaignStatusArgs& args) {
  const fs::path dir = args.dir;
  const nlohmann::json plan = read_json_or_null(dir / "campaign.json");
  if (!plan.is_object() || !plan.contains("cells") || !plan["cells"].is_array())
    throw InputError((dir / "campaign.json").string(), "", "a campaign directory (made by kevo campaign run)");
  bool runner = false;
  if (fs::exists(dir / "campaign.lock")) {
    DirLock probe(dir / "campaign.lock");
    runner = !probe.held();
  }
  nlohmann::json rows = nlohmann::json::array();
  std::map<std::string, int> counts;
  for (const auto& cell : plan["cells"]) {
    const std::string id = cell.value("id", "");
    CellState s = CellState::from_json(read_json_or_null(dir / "status" / (id + ".json")));
    std::string shown = s.state;
    bool cell_runner = false;
    if (s.state == "running" && fs::exists(dir / "status" / (id + ".lock"))) {
      DirLock probe(dir / "status" / (id + ".lock"));
      cell_runner = !probe.held();
    }
    if (s.state == "running" && !runner && !cell_runner) shown = "cut";   // its runner is gone
    else if (s.state == "pending" && s.cut) shown = "cut";
    counts[shown]++;
    std::int64_t evals = 0;
    std::vector<double> best;
    const nlohmann::json r = read_json_or_null(dir / cell.value("run_dir", "") / "report.json");
    if (r.is_object() && r.contains("tasks"))
      for (const auto& t : r["tasks"]) {
        // A task with nothing correct yet has null figures.
        auto num = [&](const char* k) { return t.contains(k) && t[k].is_number() ? t[k].get<double>() : 0.0; };
        evals += static_cast<std::int64_t>(num("evaluations"));
        best.push_back(num("best_speedup"));
      }
    double log_sum = 0.0;
    int solved = 0;
    for (double b : best)
      if (b > 0) {
        log_sum += std::log(b);
        ++solved;
      }
    rows.push_back({{"id", id}, {"state", shown}, {"attempts", s.attempts}, {"evaluations", evals},
                    {"tasks", best.size()}, {"solved", solved},
                    {"geomean_speedup", solved ? std::exp(log_sum / solved) : 0.0}, {"error", s.error},
                    {"note", s.note}});
  }
  if (args.json) {
    fmt::print("{}\n", dump_json({{"campaign", plan.value("name", "")}, {"runner_active", runner},
                                  {"cells", rows}, {"counts", counts}},
                                 2));
    return 0;
  }
  fmt::print("campaign {} in {}{}\n", plan.value("name", ""), dir.string(),
             runner ? " (a runner is active)" : "");
  fmt::print("{:<28} {:<8} {:>8} {:>11} {:>7} {:>9}  {}\n", "cell", "state", "attempts", "evaluations", "solved",
             "geomean", "error");
  for (const auto& x : rows) {
    const std::string e = x["error"].get<std::string>();
    std::string last;
    std::istringstream in(e);
    for (std::string l; std::getline(in, l);)
      if (!l.empty()) last = l;
    fmt::print("{:<28} {:<8} {:>8} {:>11} {:>3}/{:<3} {:>9}  {}\n", x["id"].get<std::string>(),
               x["state"].get<std::string>(), x["attempts"].get<int>(), x["evaluations"].get<std::int64_t>(),
               x["solved"].get<int>(), x["tasks"].get<std::size_t>(),
               x["solved"].get<int>() ? fmt::format("{:.3f}x", x["geomean_speedup"].get<double>()) : "-",
               sanitize_utf8(last.substr(0, 100), kTerminalText));
  }
  std::string summary;
  for (const auto& [k, n] : counts) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, k);
  fmt::print("{} cells: {}\n", rows.size(), summary);
  return 0;
}

// ---- report ---------------------------------------------------------------------

int cmd_campaign_report(const CampaignReportArgs& args) {
  if (!fs::exists(fs::path(args.dir) / "campaign.json"))
    throw InputError((fs::path(args.dir) / "campaign.json").string(), "", "a campaign directory (made by kevo campaign run)");
  std::vector<std::string> rest = {args.dir, "--seed", std::to_string(args.seed), "--resamples",
                                   std::to_string(args.resamples)};
  if (!args.out.empty()) rest.insert(rest.end(), {"--out", args.out});
  return run_python_tool(args.python, "kevo_campaign_report.py", rest);
}

int run_python_tool(const std::string& python, const std::string& script_name, const std::vector<std::string>& args,
                    int out_fd) {
  const fs::path script = fs::path(kevo_executable()).parent_path() / script_name;
  if (!fs::exists(script)) throw Failure("the tool's script is missing: " + script.string());
  std::vector<std::string> argv = {python, script.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return wait_process(start_process(argv, out_fd, false, false));
}

}  // namespace kevo::app
