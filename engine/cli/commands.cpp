#include "commands.hpp"

#include "campaign.hpp"

#include "kevo/core/text.hpp"
#include "kevo/app/plugins.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/core/task.hpp"
#include "kevo/engine/config.hpp"
#include "kevo/engine/progress.hpp"
#include "kevo/engine/run.hpp"
#include "kevo/mpi/run_islands.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace kevo::app {
namespace fs = std::filesystem;

namespace {

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in || fs::is_directory(path)) throw InputError(path, "", what);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Text the candidate had a hand in (its output, its compile log, a message
// that quotes what it threw), each line after "  | ": no line of it passes
// for one of kevo's own ("== other.cpp", "status:   correct"; red team 22).
std::string quoted_lines(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    out += "  | ";
    out += text.substr(0, nl);
    out += '\n';
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::string describe(const Verdict& v) {
  std::string out = fmt::format("status:   {}\nstage:    {}\n", to_string(v.status), to_string(v.stage));
  if (!v.message.empty()) {
    const std::string_view m = v.message;
    const std::size_t nl = m.find('\n');
    out += fmt::format("message:  {}\n", m.substr(0, nl));
    if (nl != std::string_view::npos) out += quoted_lines(m.substr(nl + 1));
  }
  out += fmt::format("compile:  {:.3f} s{}\n", v.compile_seconds, v.compile_cached ? " (cached)" : "");
  if (v.status == Status::wrong_answer || v.max_abs_error > 0.0)
    out += fmt::format("error:    max abs {:.3g}, relative L2 {:.3g}\n", v.max_abs_error, v.rel_l2_error);
  if (v.mismatch)
    out += fmt::format("mismatch: {} {} at {} (flat {}) on {}: expected {:.6g}, got {:.6g}\n", v.mismatch->trial,
                       v.mismatch->arg, v.mismatch->index, v.mismatch->flat_index, v.mismatch->shape,
                       v.mismatch->expected, v.mismatch->got);
  if (v.status == Status::correct)
    out += fmt::format("timing:   candidate {:.1f} us (IQR {:.1f}), reference {:.1f} us (IQR {:.1f}), {} repeats\n"
                       "speedup:  {:.3f}x\n",
                       v.cand_median_ns / 1e3, v.cand_iqr_ns / 1e3, v.ref_median_ns / 1e3, v.ref_iqr_ns / 1e3,
                       v.repeats, v.speedup);
  out += fmt::format("worker:   {:.3f} s, exit {}, signal {}, max RSS {} KiB\n", v.worker_seconds, v.exit_code,
                     v.signal, v.max_rss_kb);
  if (!v.compile_log.empty() && v.status == Status::compile_error) out += "compiler output:\n" + quoted_lines(v.compile_log);
  if (!v.output_tail.empty()) out += "candidate output (tail):\n" + quoted_lines(v.output_tail);
  return out;
}

}  // namespace

// Every rank of `mpirun -np N kevo run` (or a single process: a world of
// one) runs the same code; see engine/mpi/run_islands.hpp.
int cmd_run(const RunArgs& args, const std::atomic<int>& stop, const engine::StopSignal* stop_signal) {
  mpi::Environment env(nullptr, nullptr);
  mpi::IslandsRunArgs a;
  a.config = args.config;
  a.overrides = args.overrides;
  a.out = args.out;
  a.stop_signal = stop_signal;
  return mpi::run_islands(env, builtin_plugins(), a, stop);
}

int cmd_resume(const ResumeArgs& args, const std::atomic<int>& stop, const engine::StopSignal* stop_signal) {
  mpi::Environment env(nullptr, nullptr);
  mpi::IslandsRunArgs a;
  a.resume_dir = args.run_dir;
  a.overrides = args.overrides;
  a.stop_signal = stop_signal;
  return mpi::run_islands(env, builtin_plugins(), a, stop);
}

int cmd_eval(const EvalArgs& args) {
  // TASK FILE... [TASK FILE...]: an argument that is a task directory (it
  // holds task.json) starts the next task's files.
  std::vector<std::shared_ptr<const Task>> tasks{std::make_shared<const Task>(load_task(args.task_dir))};
  std::vector<Backend::Candidate> all;
  std::vector<std::string> files;
  for (const auto& c : args.candidates) {
    if (fs::is_directory(c) && fs::exists(fs::path(c) / "task.json")) {
      if (!all.empty() && all.back().task == tasks.back())
        tasks.push_back(std::make_shared<const Task>(load_task(c)));
      else
        throw InputError(c, "", "candidate files after the task directory " + tasks.back()->dir.string() +
                                    " (each task directory is followed by one or more files)");
      if (tasks.back()->backend != tasks.front()->backend)
        throw InputError(tasks.back()->manifest_path.string(), "/backend",
                         "\"" + tasks.front()->backend + "\" like " + tasks.front()->manifest_path.string() +
                             " (one kevo eval judges with one backend)");
      continue;
    }
    all.push_back(Backend::Candidate{tasks.back(), read_text(c, "a readable candidate source file")});
    files.push_back(c);
  }
  if (all.empty() || all.back().task != tasks.back())
    throw InputError(tasks.back()->dir.string(), "", "one or more candidate files after the task directory");
  const auto plugins = builtin_plugins();
  const Task& first = *tasks.front();
  if (std::find(plugins.backend_types.begin(), plugins.backend_types.end(), first.backend) ==
      plugins.backend_types.end())
    throw InputError(first.manifest_path.string(), "/backend",
                     fmt::format("one of the backends this kevo has ({})", fmt::join(plugins.backend_types, ", ")));
  nlohmann::json options = nlohmann::json::object();
  for (const auto& o : args.overrides) engine::apply_override(options, o);
  StrictObject obj(options, "--set", "");
  auto built = plugins.make_backend(first.backend, obj);
  // --no-prepare: the reference built, the task's checks skipped (a task
  // already prepared in this run of the tests or the benchmark).
  for (const auto& t : tasks) built.backend->prepare(*t, !args.no_prepare);
  // Several files: all in flight the backend wants (builds in parallel,
  // across the tasks too), verdicts printed in the files' order as they are
  // known.
  const bool one = all.size() == 1;
  built.backend->evaluate_all(all, args.seed, [&](std::size_t i, Verdict v) {
    // The verdict's texts are sanitised by the Backend wrapper; dump_json and
    // the terminal rules are the backstop.
    if (one) {
      if (args.json) fmt::print("{}\n", dump_json(to_json(v), 2));
      else fmt::print("{}", sanitize_utf8(describe(v), kTerminalText));
    } else if (args.json) {
      nlohmann::json line{{"candidate", files[i]}, {"verdict", to_json(v)}};
      if (tasks.size() > 1) line["task"] = all[i].task->name;
      fmt::print("{}\n", dump_json(line));
    } else {
      fmt::print("== {}{}\n{}", sanitize_utf8(files[i], kTerminalText),
                 tasks.size() > 1 ? sanitize_utf8(" (" + all[i].task->name + ")", kTerminalText) : "",
                 sanitize_utf8(describe(v), kTerminalText));
    }
    std::fflush(stdout);
  });
  return 0;
}

int cmd_tasks(const TasksArgs& args) {
  if (!fs::is_directory(args.dir)) throw InputError(args.dir, "", "a task directory or a folder of task directories");
  std::vector<fs::path> dirs;
  if (fs::exists(fs::path(args.dir) / "task.json")) {
    dirs.push_back(args.dir);
  } else {
    for (const auto& e : fs::recursive_directory_iterator(args.dir))
      if (e.is_regular_file() && e.path().filename() == "task.json") dirs.push_back(e.path().parent_path());
    std::sort(dirs.begin(), dirs.end());
  }
  if (dirs.empty()) throw InputError(args.dir, "", "at least one task directory (holding task.json)");
  const auto plugins = builtin_plugins();
  nlohmann::json out = nlohmann::json::array();
  if (!args.json)
    fmt::print("{:<14} {:<6} {:>7} {:>7} {:>9}  {}\n", "task", "backend", "visible", "hidden", "space", "directory");
  for (const auto& d : dirs) {
    const Task t = load_task(d);
    std::uint64_t points = t.space.empty() ? 0 : t.space.enumerate().size();
    if (args.prepare) {
      nlohmann::json options = nlohmann::json::object();
      for (const auto& o : args.overrides) engine::apply_override(options, o);
      StrictObject obj(options, args.overrides.empty() ? "(defaults)" : "--set", "");
      plugins.make_backend(t.backend, obj).backend->prepare(t);
    }
    if (args.json) {
      out.push_back({{"name", t.name}, {"backend", t.backend}, {"dir", d.string()}, {"visible", t.visible.size()},
                     {"hidden", t.hidden.size()}, {"space_points", points}, {"signature", t.c_signature()}});
    } else {
      fmt::print("{:<14} {:<6} {:>7} {:>7} {:>9}  {}\n", t.name, t.backend, t.visible.size(), t.hidden.size(),
                 points, d.string());
    }
  }
  if (args.json) fmt::print("{}\n", dump_json(out, 2));
  else fmt::print("{} task(s) valid{}\n", dirs.size(), args.prepare ? " (references and null candidates checked)" : "");
  return 0;
}

}  // namespace kevo::app

namespace kevo::app {

int cmd_import_kernelbench(const ImportKernelBenchArgs& args) {
  if (!fs::is_directory(args.level_dir))
    throw InputError(args.level_dir, "", "a KernelBench level folder (holding NN_Name.py problem files)");
  std::vector<std::string> rest = {"import", args.level_dir, "--out", args.out, "--max-mb", fmt::format("{}", args.max_mb)};
  if (!args.only.empty()) rest.insert(rest.end(), {"--only", args.only});
  // The importer runs the problems (on torch's meta device, then small and
  // real): in a process of its own, never in kevo's.
  return run_python_tool(args.python, "kevo_torch_tasks.py", rest, args.stdout_fd);
}

int cmd_triton_space(const TritonSpaceArgs& args) {
  if (!fs::is_regular_file(args.file)) throw InputError(args.file, "", "a Python file holding an autotuned Triton kernel");
  std::vector<std::string> rest = {"triton-space", args.file};
  if (!args.kernel.empty()) rest.insert(rest.end(), {"--kernel", args.kernel});
  if (args.product) rest.push_back("--product");
  if (args.json) rest.push_back("--json");
  // Read as a syntax tree by the tool; nothing of the file runs.
  return run_python_tool(args.python, "kevo_torch_tasks.py", rest, -1);
}

}  // namespace kevo::app
