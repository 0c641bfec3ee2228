#include "kevo/cuda/baselines.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/process.hpp"
#include "kevo/sandbox/runner.hpp"

#include <fmt/format.h>

#include <chrono>
#include <system_error>
#include <utility>

#include <unistd.h>

extern char** environ;

namespace kevo::cuda {
namespace fs = std::filesystem;
namespace sb = kevo::sandbox;

namespace {

constexpr const char* kScriptName = "kevo_torch_baselines.py";

std::string tail(const std::string& s, std::size_t n) {
  std::string t = s.size() > n ? "..." + s.substr(s.size() - n) : s;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

// The last stdout line that parses as a JSON object: torch and nvcc may print
// before it (the script sends its own noise to stderr, libraries may not).
nlohmann::json last_json_line(const std::string& out) {
  std::size_t end = out.size();
  while (end > 0) {
    const std::size_t start = out.rfind('\n', end - 1);
    const std::size_t from = start == std::string::npos ? 0 : start + 1;
    const std::string line = out.substr(from, end - from);
    if (!line.empty() && line.front() == '{') {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object()) return j;
    }
    if (start == std::string::npos) break;
    end = start;
  }
  return nullptr;
}

// The script is trusted code (ours, and the library's), but it loads a GPU
// driver, compiles with nvcc and spawns inductor workers, and runs the
// task's reference (a KernelBench file is someone else's code): it runs in
// the sandbox runner for the process group and the wall-clock kill, with
// the engine's environment (the user's python setup: PATH, PYTHONPATH,
// venvs) less every variable whose name looks like a secret (API keys
// never reach code of a task's: red team 22).
sb::Finished run_script(const BaselineSetup& setup, const fs::path& script, std::vector<std::string> args,
                        std::string input, double wall_seconds) {
  sb::Spec s;
  s.argv = {setup.options.python, script.string()};
  for (auto& a : args) s.argv.push_back(std::move(a));
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    if (kv.rfind("NVIDIA_TF32_OVERRIDE=", 0) != 0 && kv.rfind("TMPDIR=", 0) != 0 &&
        !looks_secret(std::string_view(kv).substr(0, kv.find('='))))
      s.env.push_back(kv);
  }
  s.env.push_back("NVIDIA_TF32_OVERRIDE=0");   // as for every worker
  s.env.push_back("PYTHONUNBUFFERED=1");
  s.scratch_base = sb::default_scratch_base();
  s.limits.wall_seconds = wall_seconds;
  s.limits.output_bytes = 16 << 20;   // inductor can be chatty on stderr; past this the group is killed
  s.merge_stderr = false;
  if (!input.empty()) {
    // The runner's channels live at fd 3 and up (a socket: the script reads
    // the descriptor itself, "--fd=3", not its /dev/fd path).
    s.input_fd = 3;
    s.input = std::move(input);
    for (auto& a : s.argv)
      if (a == "-") a = "--fd=3";
  }
  sb::Runner runner;
  return runner.run(std::move(s));
}

std::string failure_text(const sb::Finished& f, double wall_seconds) {
  if (f.outcome == sb::Outcome::timeout) return fmt::format("timed out after {:.0f} s (baselines.wall_seconds)", wall_seconds);
  std::string why = f.outcome == sb::Outcome::exited ? fmt::format("exit code {}", f.exit_code)
                                                      : fmt::format("{} (signal {})", sb::to_string(f.outcome), f.signal);
  const std::string err = tail(f.error_output.empty() ? f.output : f.error_output, 400);
  return err.empty() ? why : why + ": " + err;
}

}  // namespace

BaselineOptions parse_baseline_options(StrictObject* obj) {
  BaselineOptions o;
  if (!obj) return o;
  o.enabled = obj->boolean("enabled", o.enabled);
  o.python = obj->string("python", o.python);
  if (o.python.empty()) obj->fail("python", "a python interpreter (a path or a name in PATH)");
  o.script = obj->string("script", o.script);
  o.compile = obj->boolean("compile", o.compile);
  o.wall_seconds = obj->number("wall_seconds", o.wall_seconds, 1.0, 86400.0);
  obj->finish();
  return o;
}

nlohmann::json to_json(const BaselineOptions& o) {
  return {{"enabled", o.enabled}, {"python", o.python}, {"script", o.script}, {"compile", o.compile},
          {"wall_seconds", o.wall_seconds}};
}

BaselineSetup baseline_setup(BaselineOptions options, const CudaOptions& cuda) {
  BaselineSetup s;
  s.options = std::move(options);
  s.nvcc = cuda.base.compiler;
  s.nvcc_flags = cuda.base.flags;
  s.nvcc_flags.push_back("-arch=" + cuda.arch);
  s.device = cuda.device;
  s.timing = cuda.base.timing;
  return s;
}

fs::path default_baseline_script() {
  const fs::path exe = self_executable();
  return exe.empty() ? fs::path(kScriptName) : exe.parent_path() / kScriptName;
}

nlohmann::json baseline_request(const Task& task, const BaselineSetup& setup, std::uint64_t seed) {
  const auto it = task.baselines.find("torch");
  if (it == task.baselines.end()) return nullptr;
  nlohmann::json args = nlohmann::json::array();
  for (const Arg& a : task.args) {
    nlohmann::json j = {{"name", a.name}, {"dtype", to_string(a.dtype)}, {"role", to_string(a.role)}};
    if (a.is_input()) {
      static const char* kinds[] = {"uniform", "normal", "constant", "integers"};
      j["dist"] = {{"kind", kinds[static_cast<int>(a.dist.kind)]}, {"a", a.dist.a}, {"b", a.dist.b}};
    }
    args.push_back(std::move(j));
  }
  // Timed at the visible shapes, like candidates (times are summed over them).
  nlohmann::json shapes = nlohmann::json::array();
  for (const Shape& sh : task.visible) {
    nlohmann::json extents = nlohmann::json::object(), values = nlohmann::json::object();
    for (const Arg& a : task.args) {
      if (a.is_buffer()) {
        extents[a.name] = task.extents(a, sh);
      } else {
        const Value v = task.scalar_value(a, sh);
        values[a.name] = v.kind == Value::Kind::integer ? nlohmann::json(v.i) : nlohmann::json(v.as_double());
      }
    }
    shapes.push_back({{"label", sh.label}, {"extents", extents}, {"values", values}});
  }
  return {{"task", task.name},
          {"function", task.function},
          {"reference", task.reference_path.string()},
          {"expr", it->second},
          {"args", args},
          {"shapes", shapes},
          {"tolerance", {{"atol", task.tolerance.atol}, {"rtol", task.tolerance.rtol}, {"rel_l2", task.tolerance.rel_l2}}},
          {"nvcc", setup.nvcc},
          {"nvcc_flags", setup.nvcc_flags},
          {"device", setup.device},
          {"seed", seed},
          {"compile", setup.options.compile},
          {"timing",
           {{"warmup", setup.timing.warmup},
            {"min_repeats", setup.timing.min_repeats},
            {"max_repeats", setup.timing.max_repeats},
            {"budget_seconds", setup.timing.budget_seconds},
            {"flush_bytes", setup.timing.flush_kb * 1024}}}};
}

nlohmann::json measure_baselines(const BaselineSetup& setup, const std::vector<std::shared_ptr<const Task>>& tasks,
                                 std::uint64_t seed, std::FILE* log) {
  nlohmann::json doc = {{"format", "kevo-baselines/1"}, {"measured", false}, {"python", setup.options.python},
                        {"tasks", nlohmann::json::object()}};
  auto note = [&](const std::string& text) {
    doc["note"] = text;
    if (log) fmt::print(log, "kevo: library baselines: {}\n", text);
    return doc;
  };
  std::vector<std::pair<const Task*, nlohmann::json>> requests;
  for (const auto& t : tasks)
    if (auto r = baseline_request(*t, setup, seed); !r.is_null()) requests.emplace_back(t.get(), std::move(r));
  if (requests.empty()) return note("no task names a library baseline (\"baselines\" in task.json)");

  const fs::path script = setup.options.script.empty() ? default_baseline_script() : fs::path(setup.options.script);
  std::error_code ec;
  if (!fs::is_regular_file(script, ec))
    return note(fmt::format("{} not found (install it next to kevo, or set backend.cuda.baselines.script); left out",
                            script.string()));
  const std::string& py = setup.options.python;
  if (py.find('/') != std::string::npos ? ::access(py.c_str(), X_OK) != 0 : sb::find_in_path(py).empty())
    return note(fmt::format("no '{}' found; left out", py));

  // The probe: is torch importable, does it see a GPU?
  sb::Finished p;
  try {
    p = run_script(setup, script, {"--probe"}, "", 120.0);
  } catch (const Failure& e) {
    return note(fmt::format("cannot start '{}': {}; left out", py, e.what()));
  }
  const nlohmann::json pj = last_json_line(p.output);
  if (!pj.is_object())
    return note(fmt::format("'{} {} --probe' failed ({}); left out", setup.options.python, script.string(),
                            failure_text(p, 120.0)));
  if (pj.value("torch", nlohmann::json()).is_null())
    return note(fmt::format("torch is not importable by {} ({}); torch eager and torch.compile left out",
                            setup.options.python, tail(pj.value("error", std::string()), 200)));
  doc["torch"] = pj["torch"];
  if (!pj.value("cuda", false)) return note(fmt::format("torch {} sees no CUDA device; left out", pj["torch"].get<std::string>()));
  doc["device_name"] = pj.value("device_name", std::string());
  doc["measured"] = true;

  for (auto& [task, req] : requests) {
    if (log) {
      fmt::print(log, "kevo: library baselines: {}: torch eager{} ...\n", task->name,
                 setup.options.compile ? " and torch.compile" : "");
      std::fflush(log);
    }
    const auto t0 = std::chrono::steady_clock::now();
    nlohmann::json r;
    try {
      const sb::Finished f = run_script(setup, script, {"-"}, req.dump(), setup.options.wall_seconds);
      r = last_json_line(f.output);
      if (!r.is_object()) r = {{"error", failure_text(f, setup.options.wall_seconds)}};
    } catch (const Failure& e) {
      r = {{"error", std::string("cannot start the script: ") + e.what()}};
    }
    r["wall_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.contains("expr")) r["expr"] = req["expr"];
    if (log) {
      auto part = [&](const char* key, const char* label) -> std::string {
        if (!r.contains(key)) return "";
        const auto& b = r[key];
        if (b.contains("error")) return fmt::format("  {}: failed", label);
        return fmt::format("  {} {:.4f} ms{}", label, b.value("median_ms", 0.0),
                           b.value("check", std::string("ok")) == "ok" ? "" : " (WRONG output)");
      };
      if (r.contains("error"))
        fmt::print(log, "kevo: library baselines: {}: failed: {}\n", task->name, r["error"].get<std::string>());
      else
        fmt::print(log, "kevo: library baselines: {}:{}{}\n", task->name, part("eager", "torch eager"),
                   part("compile", "torch.compile"));
    }
    doc["tasks"][task->name] = std::move(r);
  }
  return doc;
}

}  // namespace kevo::cuda
