// The torch backend: kevo's torch judge behind the command backend's
// pipeline (docs/torch.md).
#include "kevo/torch/torch_backend.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/process.hpp"
#include "kevo/core/text.hpp"
#include "kevo/core/verdict_text.hpp"
#include "kevo/sandbox/runner.hpp"
#include "kevo/sandbox/scratch_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>

#include <unistd.h>

namespace kevo::torchb {

namespace fs = std::filesystem;
namespace sb = kevo::sandbox;

namespace {

constexpr const char* kEval = "kevo_torch_eval.py";
constexpr const char* kBuild = "kevo_torch_build.py";
constexpr const char* kPyhost = "libkevo_pyhost.so";

std::string default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "kevo").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "kevo").string();
  return "";
}

// What the judge and the build stage need of the engine's environment (no
// secret: the command backend refuses names that look like one).
const std::vector<std::string> kPassEnv = {"CUDA_VISIBLE_DEVICES", "PYTHONPATH", "LD_LIBRARY_PATH", "CUDA_HOME",
                                           "CUDA_PATH", "VIRTUAL_ENV", "CXX", "TRITON_CACHE_DIR",
                                           // a diagnostic: where each judgement's seconds went (docs/torch.md)
                                           "KEVO_TORCH_JUDGE_PHASES",
                                           // for benchmarks: the GPU input mask's first design (docs/torch.md)
                                           "KEVO_TORCH_MASK",
                                           // for tests: a judge's set-up before its request made slower, or
                                           // failed; a shorter wait for the judge forked ahead
                                           "KEVO_TORCH_TEST_SLOW_SETUP", "KEVO_TORCH_TEST_FAIL_AHEAD_SETUP",
                                           "KEVO_TORCH_TEST_FAIL_HOST_SETUP",
                                           "KEVO_TORCH_TEST_NEXT_READY_SECONDS"};

// The last non-empty line of a process's output (the scripts answer in one).
std::string last_line(const std::string& out) {
  std::string last;
  for (std::size_t a = 0, b; a < out.size(); a = b + 1) {
    b = out.find('\n', a);
    if (b == std::string::npos) b = out.size();
    if (b > a) last = out.substr(a, b - a);
  }
  return last;
}

std::string python_path(const TorchOptions& o) {
  if (o.python.find('/') != std::string::npos) return o.python;
  const std::string found = sb::find_in_path(o.python);
  return found.empty() ? o.python : found;
}

// A file's identity for a memo's key or check: its size and mtime ("-" if
// it cannot be read).
std::string file_stamp(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) return "-";
  const auto t = fs::last_write_time(p, ec);
  if (ec) return "-";
  return std::to_string(size) + ":" + std::to_string(t.time_since_epoch().count());
}

std::string read_small(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::string s(4096, '\0');
  f.read(s.data(), static_cast<std::streamsize>(s.size()));
  s.resize(static_cast<std::size_t>(f.gcount()));
  return s;
}

// Where a probe that passed is remembered: cache_dir/torch-probe/<key>.json.
// The key holds what decides the probe's answer and can be read without
// running Python: the interpreter (its real path, size and mtime), the
// judge's script, the device, the environment the probe gets, the host,
// its boot and its GPU driver. The entry holds torch's version.py with its
// size and mtime, checked when it is used. A probe that failed is never
// remembered (its error is worth reading fresh).
fs::path probe_memo(const TorchOptions& o, const std::string& py, const fs::path& script,
                    const std::vector<std::string>& env) {
  if (o.cache_dir.empty()) return {};
  std::error_code ec;
  const fs::path real = fs::canonical(py, ec);
  std::string material = "kevo-torch-probe-1\npython " + (ec ? py : real.string()) + " " +
                         file_stamp(ec ? fs::path(py) : real) + "\nscript " + script.string() + " " +
                         file_stamp(script) + "\ndevice " + o.device + "\n";
  for (const auto& e : env) material += "env " + e + "\n";
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  material += std::string("host ") + host + "\nboot " + read_small("/proc/sys/kernel/random/boot_id") + "\ndriver " +
              read_small("/proc/driver/nvidia/version") + "\n";
  return fs::path(o.cache_dir) / "torch-probe" / (sha256_hex(material) + ".json");
}

// The remembered probe, if it is there and torch's version.py is as it was.
std::optional<nlohmann::json> recall_probe(const fs::path& memo) {
  if (memo.empty()) return std::nullopt;
  std::ifstream f(memo);
  if (!f) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (!j.is_object() || !j.contains("torch_version_file") || !j["torch_version_file"].is_string() ||
      j.value("torch_version_stamp", std::string()) != file_stamp(j["torch_version_file"].get<std::string>()))
    return std::nullopt;
  return j;
}

void remember_probe(const fs::path& memo, nlohmann::json j) {
  if (memo.empty() || !j.contains("torch_version_file") || !j["torch_version_file"].is_string()) return;
  j["torch_version_stamp"] = file_stamp(j["torch_version_file"].get<std::string>());
  std::error_code ec;
  fs::create_directories(memo.parent_path(), ec);
  if (ec) return;   // a memo is an optimisation: no cache, no memo
  const fs::path tmp = memo.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp);
    f << j.dump() << "\n";
    if (!f) return;
  }
  fs::rename(tmp, memo, ec);
  if (ec) fs::remove(tmp, ec);
}

// What a Python process of the backend gets of kevo's environment: the
// names in `base`, then those the backend passes (kPassEnv and the like).
std::vector<std::string> passed_env(std::initializer_list<const char*> base, const std::vector<std::string>& pass) {
  std::vector<std::string> env;
  for (const char* n : base)
    if (const char* v = std::getenv(n)) env.push_back(std::string(n) + "=" + v);
  for (const auto& n : pass)
    if (const char* v = std::getenv(n.c_str())) env.push_back(n + "=" + v);
  return env;
}

// One line of JSON from `python kevo_torch_eval.py --probe`, or the same
// remembered (probe_memo): its `import torch` took about 4 s of every kevo
// start on the H200.
nlohmann::json probe(const TorchOptions& o, StrictObject& obj) {
  const std::string py = python_path(o);
  if (py.find('/') == std::string::npos)
    obj.fail("python", "a Python interpreter that imports torch (\"" + o.python + "\" is not in PATH)");
  const fs::path script = scripts_dir(o) / kEval;
  std::error_code ec;
  if (!fs::is_regular_file(script, ec))
    obj.fail("scripts", "a folder holding " + std::string(kEval) + " (" + script.string() + " is missing)");
  const std::vector<std::string> env = passed_env({"PATH", "HOME", "LANG"}, kPassEnv);
  const fs::path memo = probe_memo(o, py, script, env);
  if (auto j = recall_probe(memo)) return *j;
  sb::ScratchDir s = sb::ScratchDir::create(sb::default_scratch_base(), "kevo-torch-probe");
  sb::Spec spec;
  spec.argv = {py, script.string(), "--probe", "--device", o.device};
  spec.env = env;
  spec.env.push_back("TMPDIR=" + s.path().string());
  spec.cwd = s.path();
  spec.limits.wall_seconds = 180;
  spec.merge_stderr = false;
  sb::Runner runner;
  sb::Finished f = runner.run(std::move(spec));
  nlohmann::json j = nlohmann::json::parse(last_line(f.output), nullptr, false);
  if (!j.is_object() || j.value("torch", nlohmann::json()).is_null())
    obj.fail("python", "a Python interpreter that imports torch; " + py + " said: " +
                           head(j.is_object() ? j.value("error", std::string("?")) : f.output + f.error_output, 400));
  // A setting of the judge's environment that it refused (KEVO_TORCH_MASK).
  if (j.contains("error") && j["error"].is_string())
    throw InputError("", "environment", "a judge environment that " + py + " accepts: " + head(j["error"].get<std::string>(), 400));
  if (o.device == "cuda" && !j.value("cuda", false))
    obj.fail("device", "\"cpu\" on a machine where torch sees no GPU (torch " + j.value("torch", std::string("?")) +
                           " under " + py + ": torch.cuda.is_available() is false)");
  remember_probe(memo, j);
  return j;
}

}  // namespace

fs::path scripts_dir(const TorchOptions& o) {
  if (!o.scripts.empty()) return fs::absolute(o.scripts).lexically_normal();
  return self_executable().parent_path();
}

fs::path pyhost_library(const TorchOptions& o) {
  if (!o.pyhost.empty()) return fs::absolute(o.pyhost).lexically_normal();
  return self_executable().parent_path() / kPyhost;
}

TorchOptions parse_torch_options(StrictObject& obj) {
  TorchOptions o;
  o.config_file = obj.file();
  o.pointer = obj.pointer();
  o.python = obj.string("python", o.python);
  o.device = obj.choice("device", {"cuda", "cpu"}, "cuda");
  o.arch = obj.string("arch", o.arch);
  {
    const bool ok = o.arch.size() >= 3 && o.arch.size() <= 5 && std::isdigit(static_cast<unsigned char>(o.arch[0])) &&
                    o.arch.find('.') != std::string::npos &&
                    o.arch.find_first_not_of("0123456789.a") == std::string::npos;
    if (!ok) obj.fail("arch", "a compute capability such as \"9.0\", \"9.0a\" or \"8.0\", got \"" + o.arch + "\"");
  }
  o.scripts = obj.string("scripts", "");
  o.pyhost = obj.string("pyhost", "");
  if (auto b = obj.optional_object("build")) {
    o.build_jobs = static_cast<int>(b->integer("jobs", 0, 0, 1024));
    o.build_wall_seconds = b->number("wall_seconds", o.build_wall_seconds, 1, 86400);
    o.build_cache = b->boolean("cache", true);
    o.build_pch = b->boolean("pch", true);
    b->finish();
  }
  if (auto r = obj.optional_object("run")) {
    o.run_wall_seconds = r->number("wall_seconds", o.run_wall_seconds, 5, 86400);
    o.max_requests = static_cast<int>(r->integer("max_requests", o.max_requests, 1, 1000000));
    o.lock_dir = r->string("lock_dir", "");
    if (!o.lock_dir.empty() && !fs::is_directory(o.lock_dir))
      r->fail("lock_dir", "an existing folder for the accelerator's lock files, got \"" + o.lock_dir + "\"");
    r->finish();
  }
  if (auto s = obj.optional_object("sandbox")) {
    o.seccomp = s->boolean("seccomp", true);
    o.namespaces = s->boolean("namespaces", true);
    s->finish();
  }
  o.trials = static_cast<int>(obj.integer("trials", 3, 1, 100));
  if (auto t = obj.optional_object("timing")) {
    o.timing.warmup = static_cast<int>(t->integer("warmup", 2, 1, 1000));
    o.timing.min_repeats = static_cast<int>(t->integer("min_repeats", 10, 2, 100000));
    o.timing.max_repeats = static_cast<int>(t->integer("max_repeats", 400, 2, 1000000));
    if (o.timing.max_repeats < o.timing.min_repeats) t->fail("max_repeats", "at least min_repeats");
    o.timing.budget_seconds = t->number("budget_seconds", 1.0, 0, 3600);
    o.timing.max_iqr_fraction = t->number("max_iqr_fraction", 0.0, 0, 100);
    o.timing.max_ci_fraction = t->number("max_ci_fraction", 0.05, 0, 100);
    t->finish();
  } else {
    o.timing.warmup = 2;
    o.timing.min_repeats = 10;
    o.timing.max_repeats = 400;
    o.timing.budget_seconds = 1.0;
    o.timing.max_iqr_fraction = 0.0;
    o.timing.max_ci_fraction = 0.05;
  }
  if (auto l = obj.optional_object("limits")) {
    o.output_kb = l->integer("output_kb", o.output_kb, 1, std::int64_t{1} << 30);
    l->finish();
  }
  if (auto r = obj.optional_object("roofline")) {
    o.peak_gflops = r->number("peak_gflops", 0.0, 0, 1e12);
    o.peak_gbps = r->number("peak_gbps", 0.0, 0, 1e12);
    o.floor_fraction = r->number("floor_fraction", 0.9, 0, 1);
    r->finish();
  }
  if (auto b = obj.optional_object("baselines")) {
    o.baselines = b->boolean("enabled", true);
    o.baselines_compile = b->boolean("compile", true);
    o.baselines_wall_seconds = b->number("wall_seconds", o.baselines_wall_seconds, 10, 86400);
    b->finish();
  }
  if (auto p = obj.optional_object("profile")) {
    o.profile_every = static_cast<int>(p->integer("every", o.profile_every, 0, 1000000));
    o.profile_on_request = p->boolean("on_request", o.profile_on_request);
    o.profiler_path = p->string("path", o.profiler_path);
    o.profile_wall_seconds = p->number("wall_seconds", o.profile_wall_seconds, 10, 3600);
    if (o.profile_every > 0 && o.device != "cuda")
      p->fail("every", "0 on device \"" + o.device + "\" (ncu profiles GPU kernels; a profile needs device \"cuda\")");
    p->finish();
  }
  if (o.device != "cuda") o.profile_on_request = false;   // nothing to profile: requests are ignored
  if (o.profile_every > 0 || o.profile_on_request) {
    // Looked up now: a missing ncu is a clear error where the config asks
    // for profiles, and turns requests off otherwise (the effective config
    // says so), as for the CUDA backend.
    std::string path_value = std::getenv("PATH") ? std::getenv("PATH") : "";
    for (const char* home : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* h = std::getenv(home); h && *h) path_value += std::string(":") + h + "/bin";
    path_value += ":/usr/local/cuda/bin";
    const std::string found = sb::find_in_path(o.profiler_path, path_value);
    if (found.empty() && o.profile_every > 0)
      obj.fail("profile", "ncu in PATH or at profile.path (\"" + o.profiler_path + "\" not found)");
    if (found.empty()) o.profile_on_request = false;
    else o.profiler_path = found;
  }
  o.cache_dir = obj.string("cache_dir", default_cache_dir());
  o.scratch_dir = obj.string("scratch_dir", "");
  if (!o.scratch_dir.empty() && !fs::is_directory(o.scratch_dir))
    obj.fail("scratch_dir", "an existing folder, got \"" + o.scratch_dir + "\"");
  const fs::path lib = pyhost_library(o);
  std::error_code ec;
  if (!fs::is_regular_file(lib, ec))
    obj.fail("pyhost", "kevo's sandbox library for Python hosts (" + lib.string() +
                           " is missing; it is built with kevo, next to the kevo executable)");
  probe(o, obj);
  obj.finish();
  // Each build runs two compilers at once (nvcc and g++): half the cores'
  // worth of builds at a time finish their first candidates sooner, for the
  // judge to start on. (H200, 20 candidates: 68.9 s with 8 against 82.6 s
  // with 16 in one call, 85.8 s with 8 in another: no gain shown either way.)
  if (o.build_jobs <= 0) o.build_jobs = std::max(1, usable_cores() / 2);
  return o;
}

nlohmann::json to_json(const TorchOptions& o) {
  return {{"python", o.python},
          {"device", o.device},
          {"arch", o.arch},
          {"scripts", o.scripts},
          {"pyhost", o.pyhost},
          {"build",
           {{"jobs", o.build_jobs}, {"wall_seconds", o.build_wall_seconds}, {"cache", o.build_cache}, {"pch", o.build_pch}}},
          {"run", {{"wall_seconds", o.run_wall_seconds}, {"max_requests", o.max_requests}, {"lock_dir", o.lock_dir}}},
          {"sandbox", {{"seccomp", o.seccomp}, {"namespaces", o.namespaces}}},
          {"trials", o.trials},
          {"timing",
           {{"warmup", o.timing.warmup},
            {"min_repeats", o.timing.min_repeats},
            {"max_repeats", o.timing.max_repeats},
            {"budget_seconds", o.timing.budget_seconds},
            {"max_iqr_fraction", o.timing.max_iqr_fraction},
            {"max_ci_fraction", o.timing.max_ci_fraction}}},
          {"limits", {{"output_kb", o.output_kb}}},
          {"roofline", {{"peak_gflops", o.peak_gflops}, {"peak_gbps", o.peak_gbps}, {"floor_fraction", o.floor_fraction}}},
          {"baselines", {{"enabled", o.baselines}, {"compile", o.baselines_compile}, {"wall_seconds", o.baselines_wall_seconds}}},
          {"profile",
           {{"every", o.profile_every}, {"on_request", o.profile_on_request}, {"path", o.profiler_path},
            {"wall_seconds", o.profile_wall_seconds}}},
          {"cache_dir", o.cache_dir},
          {"scratch_dir", o.scratch_dir}};
}

command::CommandOptions command_options(const TorchOptions& o) {
  command::CommandOptions c;
  const std::string py = python_path(o);
  const std::string dir = scripts_dir(o).string();
  c.source_file = "candidate.py";
  command::CompileStage cs;
  cs.argv = {py, dir + "/" + kBuild, "--source", "{source}", "--out", "{out_dir}", "--task", "{task_dir}",
             "--device", o.device, "--arch", o.arch};
  if (!o.cache_dir.empty() && o.build_cache) {
    cs.argv.push_back("--objects");
    cs.argv.push_back((fs::path(o.cache_dir) / "torch-objects").string());
    // The reference's build (a task's prepare) builds the PCH that CUDA
    // candidates' bindings take, so the first candidates do not wait for it.
    if (!o.build_pch) cs.argv.push_back("--no-pch");
    else if (o.device == "cuda") cs.argv.push_back("--warm-pch");
  }
  cs.version_argv = {py, dir + "/" + kBuild, "--version", "--device", o.device, "--arch", o.arch};
  cs.wall_seconds = o.build_wall_seconds;
  cs.jobs = o.build_jobs;
  cs.cache = o.build_cache;
  c.compile = std::move(cs);
  // The library also forks the judge's processes (without the atfork
  // handlers that would mark them unable to use CUDA): always passed.
  c.run.argv = {py, dir + "/" + kEval, "--serve", "--device", o.device, "--pyhost", pyhost_library(o).string()};
  if (!o.seccomp) c.run.argv.push_back("--no-seccomp");
  if (!o.namespaces) c.run.argv.push_back("--no-namespaces");
  if (o.profile_every > 0 || o.profile_on_request) {
    c.run.argv.insert(c.run.argv.end(), {"--ncu", o.profiler_path, "--profile-seconds", fmt::format("{}", o.profile_wall_seconds)});
    c.profile_every = o.profile_every;
  }
  c.profile_on_request = o.profile_on_request;
  c.run.wall_seconds = o.run_wall_seconds;
  c.run.jobs = 1;
  c.run.accelerator = o.device == "cuda";
  c.run.persistent = true;
  c.run.max_requests = o.max_requests;
  // The zygote runs no candidate code (a forked judge per request does, in
  // sandboxed hosts): a wrong answer does not cost the next candidate a
  // fresh import of torch.
  c.run.restart_on = command::RunStage::Restart::breach;   // candidates run in hosts of their own
  c.run.lock_dir = o.lock_dir;
  c.env = {{"PYTHONDONTWRITEBYTECODE", "1"}, {"TORCHINDUCTOR_COMPILE_THREADS", "1"}};
  c.pass_env = kPassEnv;
  c.output_kb = o.output_kb;
  c.peak_gflops = o.peak_gflops;
  c.peak_gbps = o.peak_gbps;
  c.floor_fraction = o.floor_fraction;
  c.trials = o.trials;
  c.timing = o.timing;
  c.cache_dir = o.cache_dir;
  c.scratch_dir = o.scratch_dir;
  c.config_dir = fs::path(o.config_file).parent_path();
  c.config_file = o.config_file;
  c.pointer = o.pointer;
  c.backend_name = "torch";
  c.bundled = true;
  return c;
}

std::unique_ptr<Backend> make_torch_backend(const TorchOptions& o) { return command::make_command_backend(command_options(o)); }

nlohmann::json measure_baselines(const TorchOptions& o, const std::vector<std::shared_ptr<const Task>>& tasks,
                                 std::uint64_t seed, std::FILE* log) {
  nlohmann::json doc = {{"format", "kevo-baselines/1"}, {"measured", false}, {"tasks", nlohmann::json::object()}};
  if (!o.baselines) {
    doc["note"] = "turned off (backend.torch.baselines.enabled false)";
    return doc;
  }
  const command::CommandOptions c = command_options(o);
  std::vector<std::string> argv = {python_path(o), (scripts_dir(o) / kEval).string(), "--baselines", "--device", o.device};
  if (!o.baselines_compile) argv.push_back("--no-compile");
  std::mt19937_64 rng(seed ^ 0x62617365ULL);
  bool any = false;
  for (const auto& t : tasks) {
    if (!t->is_torch()) continue;
    command::RequestInfo info;
    info.nonce = fmt::format("{:016x}", rng());
    info.mode = "baseline";
    info.seed = seed;
    info.trials = 1;
    info.timing = true;
    info.timing_options = o.timing;
    info.wall_seconds = o.baselines_wall_seconds;
    info.reference_source = t->reference_path;
    std::vector<command::RequestShape> shapes;
    for (const auto& s : t->visible) shapes.push_back({s.label, "visible", s});
    const std::string request = command::make_request(*t, shapes, info).dump() + "\n";
    sb::ScratchDir s = sb::ScratchDir::create(sb::default_scratch_base(), "kevo-torch-baselines");
    sb::Spec spec;
    spec.argv = argv;
    spec.env = passed_env({"PATH", "HOME", "LANG", "KEVO_DEVICE_INDEX"}, c.pass_env);
    for (const auto& [k, v] : c.env) spec.env.push_back(k + "=" + v);
    spec.env.push_back("TMPDIR=" + s.path().string());
    spec.cwd = s.path();
    spec.input_fd = 0;
    spec.input = request;
    spec.merge_stderr = false;
    spec.limits.wall_seconds = o.baselines_wall_seconds;
    spec.limits.output_bytes = 1 << 20;
    sb::Runner runner;
    sb::Finished f = runner.run(std::move(spec));
    nlohmann::json entry;
    nlohmann::json j = nlohmann::json::parse(last_line(f.output), nullptr, false);
    if (f.outcome == sb::Outcome::timeout) {
      entry = {{"error", "timed out after " + short_number(o.baselines_wall_seconds) + " s"}};
    } else if (!j.is_object() || !j.contains("baselines")) {
      entry = {{"error", "the baseline run ended without a result (" + std::string(sb::to_string(f.outcome)) + ", exit " +
                             std::to_string(f.exit_code) + "): " + tail(f.error_output, 300)}};
    } else {
      entry = j["baselines"];
      if (j.contains("torch")) doc["torch"] = j["torch"];
      if (j.contains("device_name")) doc["device_name"] = j["device_name"];
      any = true;
    }
    if (log) {
      std::string line = "baselines " + t->name + ":";
      for (const char* k : {"eager", "compile"})
        if (entry.contains(k) && entry[k].contains("median_ms"))
          line += fmt::format(" {} {:.4f} ms", k, entry[k]["median_ms"].get<double>());
      if (entry.contains("error")) line += " failed: " + entry["error"].get<std::string>();
      std::fprintf(log, "%s\n", line.c_str());
    }
    doc["tasks"][t->name] = std::move(entry);
  }
  doc["measured"] = any;
  return doc;
}

}  // namespace kevo::torchb
