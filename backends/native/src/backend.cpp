#include "kevo/native/backend.hpp"

#include "kevo/core/process.hpp"
#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/ncu_summary.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/core/text.hpp"
#include "kevo/core/verdict_text.hpp"
#include "kevo/native/protocol.hpp"
#include "kevo/native/compile_cache.hpp"
#include "kevo/native/health_gate.hpp"
#include "kevo/native/libraries.hpp"
#include "kevo/sandbox/isolation.hpp"
#include "kevo/sandbox/runner.hpp"
#include "kevo/sandbox/seccomp.hpp"

#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

extern char** environ;   // POSIX; not declared by every libc header set

namespace kevo::native {

namespace fs = std::filesystem;
namespace sb = kevo::sandbox;

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kCompileLogCap = 16 * 1024;   // kept in the verdict: the first errors
constexpr std::size_t kOutputTailCap = 4 * 1024;    // kept in the verdict: the last output
constexpr std::int64_t kResultPipeCap = 1 << 20;


std::string host_cpu_id() {
  // What -march=native depends on: the CPU model and feature flags.
  std::ifstream in("/proc/cpuinfo");
  std::string line, id;
  while (std::getline(in, line)) {
    if (line.empty()) break;   // first processor only
    for (const char* key : {"vendor_id", "model name", "flags", "Features", "CPU implementer",
                            "CPU architecture", "CPU variant", "CPU part", "isa"}) {
      if (line.rfind(key, 0) == 0) id += line + "\n";
    }
  }
  return hex64(fnv1a64(id));
}

std::vector<std::string> pass_env(const std::vector<std::string>& names, std::vector<std::string> fixed) {
  for (const auto& n : names)
    if (const char* v = std::getenv(n.c_str())) fixed.push_back(n + "=" + v);
  return fixed;
}

std::vector<std::string> pass_env_prefixed(const std::vector<std::string>& prefixes, std::vector<std::string> out) {
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    for (const auto& p : prefixes)
      if (kv.rfind(p, 0) == 0) out.push_back(kv);
  }
  return out;
}

fs::path self_dir() { return self_executable().parent_path(); }

}  // namespace

std::string compiled_source(const Task& task, const std::string& source) {
  std::string s = source;
  if (!s.empty() && s.back() != '\n') s += '\n';
  s += "#line 1 \"kevo-entry.cpp\"\n";
  s += "// kevo: the entry point through which the evaluation worker calls " + task.function + "\n";
  s += "#include <cstdint>\n";
  // bfloat16 buffers are __nv_bfloat16* (load_task allows them for CUDA tasks only).
  if (std::any_of(task.args.begin(), task.args.end(), [](const Arg& a) { return a.dtype == DType::bf16; }))
    s += "#include <cuda_bf16.h>\n";
  s += std::string("extern \"C\" void ") + kEntrySymbol + "(void* const* kevo_args_) {\n";
  s += "  " + task.function + "(";
  for (std::size_t k = 0; k < task.args.size(); ++k) {
    const Arg& a = task.args[k];
    std::string type(c_type(a.dtype));
    if (type.rfind("int", 0) == 0) type = "std::" + type;
    s += k ? ",\n      " : "\n      ";
    // Inputs are passed as non-const pointers (which convert to const):
    // a kernel declaring them non-const still compiles; changes are caught.
    if (a.is_buffer()) s += "static_cast<" + type + "*>(kevo_args_[" + std::to_string(k) + "])";
    else s += "*static_cast<const " + type + "*>(kevo_args_[" + std::to_string(k) + "])";
  }
  s += ");\n}\n";
  return s;
}

// ---------------------------------------------------------------------------

struct NativeBackend::Impl {
  NativeOptions opt;
  std::string compiler_path, compiler_version, host_id;
  fs::path worker_path, scratch_base;
  // This backend's compiled objects (one per key, for its lifetime), and
  // the compile cache shared with other runs (when cache_dir is set).
  sb::ScratchDir objects;
  std::optional<CompileCache> cache;
  bool cache_warned = false;
  std::vector<std::string> compile_env;
  // The worker's environment is read when each worker starts (the islands'
  // device binding, CUDA_VISIBLE_DEVICES or KEVO_DEVICE_INDEX, is set
  // before the backend is built; reading it late costs nothing).
  std::vector<std::string> worker_env_fixed, worker_env_names;
  std::vector<std::string> worker_env() const {
    return pass_env_prefixed({"OMP_", "GOMP_", "KMP_"}, pass_env(worker_env_names, worker_env_fixed));
  }
  std::uint64_t timed_started = 0;   // for flavour.profile_every
  nlohmann::json isolation;          // the last candidate host's IsolationReport (guarantees())
  std::string compiler_unconfined;   // why compilers may write outside their build ("" = they may not)
  std::optional<HealthGate> health;  // the device's health check after an accelerator error (flavours with one)
  sb::Runner runner;
  Stats stats;

  std::map<std::string, fs::path> prepared;   // manifest -> reference .so

  enum class State { compile_queued, compiling, compile_waiting, eval_queued, evaluating, done };
  struct Job {
    std::uint64_t key = 0;
    bool internal = false;
    bool compile_only = false;
    std::uint64_t request_id = 0;
    std::shared_ptr<const Task> task;
    std::string source;
    std::vector<std::string> link;   // extra libraries (source baselines), -l<name>
    bool reference = false;          // the task's reference: links flavour.reference_link
    std::uint64_t seed = 0;
    std::string profile_request;     // EvalRequest::profile
    std::string profile_reason;      // why this job's worker was asked for a profile ("" = it was not)
    std::string mode = kModeJudge;
    std::string null_kind;
    bool timing = true;
    fs::path ref_so, so_path;
    std::string so_key;
    KeyParts key_parts;              // everything that goes into the build
    std::string nonce;
    Verdict v;
    bool mismatch_hidden = false;
    std::string hidden_label;   // the hidden shape named in the verdict, to redact in feedback
    std::string after_hidden;   // the first hidden shape the judgement ran (redacts later failures too)
    State state = State::compile_queued;
  };
  std::map<std::uint64_t, Job> jobs;
  std::uint64_t next_key = 1;
  std::deque<std::uint64_t> compile_q, eval_q;
  std::map<std::uint64_t, std::uint64_t> by_proc;                  // runner id -> job
  std::map<std::string, std::vector<std::uint64_t>> compile_waiters;   // so key -> jobs waiting
  int compiling = 0, evaluating_timed = 0, evaluating_untimed = 0;
  std::vector<EvalResult> ready;

  explicit Impl(NativeOptions o);
  std::uint64_t add(Job j);
  void schedule();
  void start_compile(Job& j);
  void start_eval(Job& j);
  std::string check_health();
  void start_failed(Job& j, const std::string& what, const std::exception& e);
  void to_eval(Job& j);
  void handle(sb::Finished& f);
  void on_compile_done(Job& j, sb::Finished& f);
  void on_eval_done(Job& j, sb::Finished& f);
  void take_result(Job& j, JudgeResult r, const sb::Finished& f);
  void collect_flavour_stats(const nlohmann::json& flavour);
  void finish(Job& j);
  void drive_until_done(const std::vector<std::uint64_t>& keys);
  std::size_t pending_candidates() const;
  std::vector<std::string> link_args(const Job& j) const;

  // Internal jobs (prepare, baselines) of one blocking call: on any exit,
  // also a throw, those still running are killed and all are forgotten;
  // none of them reaches the engine.
  struct Internal {
    Impl& m;
    std::vector<std::uint64_t> keys;
    ~Internal();
  };
};

NativeBackend::Impl::Impl(NativeOptions o) : opt(std::move(o)) {
  // The process that starts candidates' judges holds what candidates must
  // not read (API keys in its environment, the tasks' hidden shapes): no
  // process of the same user may trace it or read its /proc files.
  sb::set_non_dumpable();
  const int cores = usable_cores();   // this rank's share of the host
  if (opt.compile_jobs <= 0) opt.compile_jobs = cores;
  if (opt.eval_jobs <= 0) opt.eval_jobs = 1;
  if (opt.limits.cpu_seconds <= 0) opt.limits.cpu_seconds = opt.limits.wall_seconds * cores;
  if (opt.timing.flush_kb <= 0) opt.timing.flush_kb = default_flush_kb();
  if (opt.trials < 1) throw Failure(opt.flavour.name + " backend: trials must be at least 1");
  if (!opt.flavour.health_argv.empty()) health.emplace(opt.flavour.name, [this] { return check_health(); });

  scratch_base = opt.scratch_dir.empty() ? sb::default_scratch_base() : fs::path(opt.scratch_dir);
  if (!fs::is_directory(scratch_base))
    throw Failure(opt.flavour.name + " backend: the scratch base directory " + scratch_base.string() + " does not exist");

  // Compilers get the variables that locate toolchains and headers; the
  // worker gets threading knobs only: candidate code must not read the
  // engine's environment (API keys...).
  compile_env = pass_env({"PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH",
                          "CPLUS_INCLUDE_PATH", "COMPILER_PATH", "GCC_EXEC_PREFIX"},
                         {"LANG=C", "LC_ALL=C"});
  {
    std::vector<std::string> fixed = {"PATH=/usr/bin:/bin", "LANG=C", "LC_ALL=C", "MALLOC_ARENA_MAX=4"};
    fixed.insert(fixed.end(), opt.flavour.worker_env.begin(), opt.flavour.worker_env.end());
    std::vector<std::string> passed = {"LD_LIBRARY_PATH"};
    passed.insert(passed.end(), opt.flavour.worker_env_pass.begin(), opt.flavour.worker_env_pass.end());
    worker_env_fixed = std::move(fixed);
    worker_env_names = std::move(passed);
  }

  std::string path_value;
  if (const char* p = std::getenv("PATH")) path_value = p;
  compiler_path = sb::find_in_path(opt.compiler, path_value);
  if (compiler_path.empty()) throw Failure(opt.flavour.name + " backend: compiler '" + opt.compiler + "' not found in PATH");

  {
    sb::Spec s;
    s.argv = {compiler_path, "--version"};
    s.env = compile_env;
    s.scratch_base = scratch_base;
    s.limits.wall_seconds = 30;
    sb::Finished f = runner.run(std::move(s));
    if (f.outcome != sb::Outcome::exited || f.exit_code != 0)
      throw Failure(opt.flavour.name + " backend: '" + compiler_path + " --version' failed: " + head(f.output, 1000));
    compiler_version = f.output.substr(0, f.output.find('\n'));
  }
  host_id = host_cpu_id();

  const std::string& fl = opt.flavour.name;
  worker_path = opt.worker.empty() ? self_dir() / opt.flavour.worker_name : fs::path(opt.worker);
  if (::access(worker_path.c_str(), X_OK) != 0)
    throw Failure(fl + " backend: the evaluation worker " + worker_path.string() + " is missing or not executable (build the " +
                  opt.flavour.worker_name + " target, or set backend." + fl + ".worker)");

  objects = sb::ScratchDir::create(scratch_base, "kevo-" + opt.flavour.name + "-so");
  if (!opt.cache_dir.empty()) {
    const fs::path root = fs::path(opt.cache_dir) / (opt.flavour.name + "-v2");
    try {
      cache.emplace(root, opt.cache_limits);
    } catch (const std::exception& e) {
      throw Failure(opt.flavour.name + " backend: cannot open the compile cache " + root.string() + ": " + e.what());
    }
  }
}

std::uint64_t NativeBackend::Impl::add(Job j) {
  j.key = next_key++;
  const std::uint64_t key = j.key;
  if (j.state == State::compile_queued) compile_q.push_back(key);
  else if (j.state == State::eval_queued) eval_q.push_back(key);
  jobs.emplace(key, std::move(j));
  return key;
}

std::size_t NativeBackend::Impl::pending_candidates() const {
  std::size_t n = 0;
  for (const auto& [k, j] : jobs) n += (!j.internal && j.state != State::done) ? 1 : 0;
  return n;
}

void NativeBackend::Impl::schedule() {
  // Compile stage: cache hits go straight on, identical sources wait for
  // the one compile in progress, the rest take free compile slots.
  for (auto it = compile_q.begin(); it != compile_q.end();) {
    Job& j = jobs.at(*it);
    if (j.so_key.empty()) {
      // Everything that goes into the build, the source with its adapter
      // first; the key is the SHA-256 of all of it (the cache checks the
      // whole material on every hit).
      j.key_parts = {"kevo-" + opt.flavour.name, compiled_source(*j.task, j.source), compiler_path, compiler_version,
                     host_id};
      for (const auto& f : opt.flags) j.key_parts.push_back("flag " + f);
      for (const auto& f : opt.flavour.link_flags) j.key_parts.push_back("link " + f);
      for (const auto& l : link_args(j)) j.key_parts.push_back("lib " + l);
      j.so_key = sha256_hex(key_material(j.key_parts));
      j.so_path = objects.path() / (j.so_key + ".so");
    }
    std::error_code ec;
    bool have = fs::exists(j.so_path, ec);
    if (!have && cache) {
      const FetchResult got = cache->fetch(j.key_parts, j.so_path);
      have = got.hit();
      if (got.outcome == FetchOutcome::clash || got.outcome == FetchOutcome::corrupt)
        std::fprintf(stderr, "kevo: %s backend: compile cache %s: %s (compiled again)\n", opt.flavour.name.c_str(),
                     to_string(got.outcome), got.detail.c_str());
    }
    if (have) {
      j.v.compile_cached = true;
      ++stats.cache_hits;
      it = compile_q.erase(it);
      to_eval(j);
    } else if (compile_waiters.count(j.so_key)) {
      compile_waiters[j.so_key].push_back(j.key);
      j.state = State::compile_waiting;
      it = compile_q.erase(it);
    } else if (compiling < opt.compile_jobs) {
      it = compile_q.erase(it);
      try {
        start_compile(j);
      } catch (const std::exception& e) {
        start_failed(j, "cannot start the compiler: ", e);
      }
    } else {
      ++it;
    }
  }
  // A failed health check is made again once this backend's judgements
  // have ended; new ones wait for it.
  if (health) health->tick(static_cast<std::size_t>(evaluating_timed + evaluating_untimed));
  for (auto it = eval_q.begin(); it != eval_q.end() && !(health && health->holding());) {
    Job& j = jobs.at(*it);
    const bool can = j.timing ? evaluating_timed < opt.eval_jobs
                              : evaluating_untimed < std::max(opt.compile_jobs, opt.eval_jobs);
    if (can) {
      it = eval_q.erase(it);
      try {
        start_eval(j);
      } catch (const std::exception& e) {
        start_failed(j, "cannot start the evaluation worker: ", e);
      }
    } else {
      ++it;
    }
  }
}

void NativeBackend::Impl::start_failed(Job& j, const std::string& what, const std::exception& e) {
  // fork/pipe/scratch-dir failures (process or disk limits): the candidate
  // still gets a verdict so that nothing in flight is lost.
  if (j.state == State::compile_queued) {
    std::vector<std::uint64_t> waiters = std::move(compile_waiters[j.so_key]);
    compile_waiters.erase(j.so_key);
    for (std::uint64_t w : waiters) {
      Job& o = jobs.at(w);
      o.v.status = Status::internal_error;
      o.v.message = what + e.what();
      finish(o);
    }
  }
  j.v.status = Status::internal_error;
  j.v.message = what + e.what();
  finish(j);
}

std::vector<std::string> NativeBackend::Impl::link_args(const Job& j) const {
  // A reference links what the flavour gives references (trusted code); a
  // candidate only what its task allows; a source baseline what it names.
  std::vector<std::string> out;
  if (j.reference) out = opt.flavour.reference_link;
  if (!j.reference && j.link.empty())
    for (const std::string& lib : j.task->libraries) {
      const auto it = opt.flavour.link_libraries.find(lib);
      if (it != opt.flavour.link_libraries.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    }
  for (const auto& l : j.link) out.push_back("-l" + l);
  return out;
}

namespace {

// What a compile may read (Landlock, with its writes confined): the
// system's trees, the compiler's own folder (and its prefix, for a bin/
// folder), and every path its command names (-I, -L, -isystem, -include,
// files). Not the user's files, the task's folder or /proc: a source that
// names another file (#include "/home/.../key") cannot open it, so it
// never reaches the compile log, the feedback or the lineage.
std::vector<std::string> compile_read_dirs(const std::vector<std::string>& argv) {
  std::vector<std::string> dirs = sb::system_read_dirs();
  std::error_code ec;
  if (!argv.empty()) sb::add_program_dirs(dirs, fs::weakly_canonical(argv[0], ec));
  for (std::size_t i = 1; i < argv.size(); ++i) {
    std::string a = argv[i];
    for (const char* opt : {"-I", "-L", "-isystem", "-include", "-idirafter", "-iquote"})
      if (a.rfind(opt, 0) == 0) {
        a = a.size() > std::strlen(opt) ? a.substr(std::strlen(opt)) : (i + 1 < argv.size() ? argv[i + 1] : "");
        break;
      }
    if (!a.empty() && a[0] == '/') dirs.push_back(a);
  }
  return dirs;
}

}  // namespace

void NativeBackend::Impl::start_compile(Job& j) {
  j.v.stage = Stage::compile;
  sb::Spec s;
  s.argv = {compiler_path};
  s.argv.insert(s.argv.end(), opt.flags.begin(), opt.flags.end());
  // -z defs (in the link flags): an undefined symbol is a compile error
  // here, not a load error later.
  s.argv.insert(s.argv.end(), opt.flavour.link_flags.begin(), opt.flavour.link_flags.end());
  for (const auto& l : link_args(j)) s.argv.push_back(l);
  for (const std::string& a : {std::string("-o"), std::string("kernel.so"), opt.flavour.source_file}) s.argv.push_back(a);
  s.env = compile_env;
  s.scratch_base = scratch_base;
  s.files = {{opt.flavour.source_file, compiled_source(*j.task, j.source)}};
  s.limits.wall_seconds = opt.limits.compile_wall_seconds;
  s.limits.memory_mb = opt.limits.compile_memory_mb;
  s.limits.file_mb = opt.limits.file_mb;
  s.limits.output_bytes = 256 * 1024;
  s.limits.processes = 64;
  // The compiler may write its build (the scratch dir) and nothing else,
  // and read only the system's trees and what its command names.
  s.confine_writes = true;
  s.read_dirs = compile_read_dirs(s.argv);
  const std::uint64_t pid = runner.start(std::move(s));
  by_proc[pid] = j.key;
  compile_waiters[j.so_key];   // others with this key wait for this compile
  j.state = State::compiling;
  ++compiling;
  ++stats.compiles;
}

void NativeBackend::Impl::to_eval(Job& j) {
  if (j.compile_only) {
    finish(j);
    return;
  }
  j.state = State::eval_queued;
  eval_q.push_back(j.key);
}

std::string NativeBackend::Impl::check_health() {
  sb::Spec s;
  s.argv = {worker_path.string()};
  s.argv.insert(s.argv.end(), opt.flavour.health_argv.begin(), opt.flavour.health_argv.end());
  s.env = worker_env();
  s.scratch_base = scratch_base;
  s.limits.wall_seconds = 60;
  s.limits.processes = opt.limits.processes;
  s.limits.open_files = std::max(opt.limits.open_files, 1024);
  sb::Finished f = runner.run(std::move(s));
  ++stats.health_checks;
  if (f.outcome == sb::Outcome::exited && f.exit_code == 0) return {};
  std::string why = clean_text(head(f.output, 400));
  std::fprintf(stderr, "kevo: the %s device failed a health check: %s\n", opt.flavour.name.c_str(), why.c_str());
  return why.empty() ? std::string("the check exited with ") + std::to_string(f.exit_code) : why;
}

void NativeBackend::Impl::start_eval(Job& j) {
  if (health && !health->given_up().empty()) {
    j.v.status = Status::internal_error;
    j.v.message = health->given_up();
    finish(j);
    return;
  }
  j.nonce = kevo::random_hex(16);
  JudgeRequest req;
  req.nonce = j.nonce;
  req.mode = j.mode;
  req.null_kind = j.null_kind;
  req.task_dir = j.task->dir.string();
  req.reference_so = j.ref_so.string();
  if (j.mode != kModeNull) req.candidate_so = j.so_path.string();
  req.seed = j.seed;
  req.trials = opt.trials;
  req.timing = j.timing;
  req.timing_options = {opt.timing.warmup,          opt.timing.min_repeats, opt.timing.max_repeats,
                        opt.timing.budget_seconds,  opt.timing.flush_kb * 1024, opt.timing.max_iqr_fraction};
  req.judge_threads = opt.judge_threads > 0 ? opt.judge_threads : std::max(1, usable_cores() / std::max(opt.eval_jobs, 1));
  req.wall_seconds = opt.limits.wall_seconds;
  req.seccomp = opt.seccomp;
  req.policy = opt.flavour.policy;
  req.namespaces = opt.namespaces;
  req.host = {opt.limits.memory_mb, opt.limits.cpu_seconds, opt.limits.file_mb, opt.limits.open_files};
  req.roofline.peak_gflops = opt.roofline.peak_gflops;
  req.roofline.peak_gbps = opt.roofline.peak_gbps;
  req.roofline.floor_fraction = opt.roofline.floor_fraction;
  req.libraries = j.task->libraries;
  // A source baseline is trusted code that links what it names.
  req.libraries.insert(req.libraries.end(), j.link.begin(), j.link.end());
  req.flavour = opt.flavour.worker_request;
  // Profiles: every n-th timed candidate (the policy), or one an operator
  // asked for (the analyst, for a lineage without profiles). Internal jobs
  // (baselines) are never profiled and do not advance the count.
  const bool can_profile = opt.flavour.profile_every > 0 || opt.flavour.profile_on_request;
  if (can_profile && j.timing && j.mode == kModeJudge && !j.internal) {
    const int every = opt.flavour.profile_every;
    const bool picked = every > 0 && ++timed_started % static_cast<std::uint64_t>(every) == 0;
    const bool asked = opt.flavour.profile_on_request && !j.profile_request.empty();
    req.flavour["profile"] = picked || asked;
    j.profile_reason = profile_reason(picked, every, asked, j.profile_request);
  }

  sb::Spec s;
  s.argv = {worker_path.string(), "--request-fd", std::to_string(kRequestFd), "--result-fd",
            std::to_string(kResultFd)};
  s.env = worker_env();
  s.scratch_base = scratch_base;
  s.input_fd = kRequestFd;
  s.input = to_json(req).dump();
  s.result_fd = kResultFd;
  // The judge is kevo's own code: the candidate's memory, CPU-time and
  // descriptor limits are set by its kernel host on itself (the judge
  // holds the pristine inputs and the reference's outputs besides).
  s.limits.wall_seconds = opt.limits.wall_seconds;
  s.limits.file_mb = opt.limits.file_mb;
  s.limits.output_bytes = opt.limits.output_kb * 1024;
  s.limits.result_bytes = kResultPipeCap;
  s.limits.open_files = std::max(opt.limits.open_files, 1024);
  s.limits.processes = opt.limits.processes;
  const std::uint64_t pid = runner.start(std::move(s));
  by_proc[pid] = j.key;
  j.state = State::evaluating;
  j.v.stage = Stage::correctness;
  (j.timing ? evaluating_timed : evaluating_untimed)++;
  ++stats.workers;
}

void NativeBackend::Impl::handle(sb::Finished& f) {
  auto it = by_proc.find(f.id);
  if (it == by_proc.end()) return;   // cancelled meanwhile
  const std::uint64_t key = it->second;
  by_proc.erase(it);
  Job& j = jobs.at(key);
  try {
    if (j.state == State::compiling) on_compile_done(j, f);
    else on_eval_done(j, f);
  } catch (const std::exception& e) {
    // kevo's own failure (cache write, bad worker output): the candidate
    // still gets a verdict, so nothing in flight is lost.
    if (j.state == State::compiling) --compiling;
    if (j.state == State::evaluating) (j.timing ? evaluating_timed : evaluating_untimed)--;
    j.v.status = Status::internal_error;
    j.v.message = std::string("kevo failed while judging: ") + e.what();
    j.v.feedback = j.v.message;
    finish(j);
  }
}

void NativeBackend::Impl::on_compile_done(Job& j, sb::Finished& f) {
  --compiling;
  if (!f.confine_error.empty()) compiler_unconfined = f.confine_error;
  j.v.compile_seconds = f.wall_seconds;
  const fs::path built = f.scratch.valid() ? f.scratch.path() / "kernel.so" : fs::path();
  std::error_code ec;
  const bool ok = f.outcome == sb::Outcome::exited && f.exit_code == 0 && !built.empty() && fs::exists(built, ec);
  std::vector<std::uint64_t> waiters = std::move(compile_waiters[j.so_key]);
  compile_waiters.erase(j.so_key);

  if (ok) {
    // This backend's copy (what its judges load), then the shared cache:
    // a store that fails costs later runs a compile, never this verdict.
    const fs::path tmp = j.so_path.string() + ".tmp";
    fs::copy_file(built, tmp, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(tmp, j.so_path, ec);
    if (ec) throw Failure("cannot keep the compiled kernel in " + objects.path().string() + ": " + ec.message());
    if (cache) {
      const StoreResult stored = cache->store(j.key_parts, built);
      if (stored.outcome == StoreOutcome::failed && !cache_warned) {
        cache_warned = true;
        std::fprintf(stderr, "kevo: %s backend: %s (the run goes on; later runs compile again)\n",
                     opt.flavour.name.c_str(), stored.message.c_str());
      }
    }
    j.v.compile_log = head(f.output, kCompileLogCap);   // warnings
    to_eval(j);
    for (std::uint64_t w : waiters) {
      Job& o = jobs.at(w);
      o.v.compile_cached = true;
      o.v.stage = Stage::compile;
      to_eval(o);
    }
    return;
  }

  Verdict& v = j.v;
  v.stage = Stage::compile;
  v.compile_log = head(f.output, kCompileLogCap);
  v.exit_code = f.exit_code;
  v.signal = f.signal;
  if (f.outcome == sb::Outcome::timeout) {
    v.status = Status::timeout;
    v.message = "compilation took longer than " + std::to_string(static_cast<int>(opt.limits.compile_wall_seconds)) +
                " s (limits.compile_wall_seconds)";
  } else if (f.outcome == sb::Outcome::output_limit) {
    v.status = Status::compile_error;
    v.message = "compilation failed with more than 256 KiB of diagnostics";
  } else if (f.outcome == sb::Outcome::signaled) {
    v.status = Status::compile_error;
    v.message = "the compiler was killed by " + sb::signal_name(f.signal);
  } else {
    v.status = Status::compile_error;
    // The first error line makes a useful one-line message.
    std::string first;
    std::istringstream in(f.output);
    for (std::string line; std::getline(in, line);)
      if (line.find("error") != std::string::npos) {
        first = line;
        break;
      }
    v.message = "compile error" + (first.empty() ? " (exit code " + std::to_string(f.exit_code) + ")"
                                                 : ": " + clean_text(first.substr(0, 300)));
    // A link that fails on a known library's symbol: the candidate calls
    // what its task does not allow (it is linked only with the task's
    // libraries), not a kernel that does not build.
    for (const std::string& sym : undefined_symbols(f.output)) {
      const std::string lib = library_of_symbol(sym);
      if (lib.empty()) continue;
      v.status = Status::forbidden;
      v.message = "the candidate calls " + clean_text(sym.substr(0, 200)) + " from " + lib +
                  ", a library the task does not allow (its \"libraries\" list)";
      ++stats.forbidden_links;
      break;
    }
  }
  for (std::uint64_t w : waiters) {
    Job& o = jobs.at(w);
    const bool cached = o.v.compile_cached;
    o.v = v;
    o.v.compile_cached = cached;
    finish(o);
  }
  finish(j);
}

namespace {

struct Events {
  // violation: a judge that runs the candidate in its own process (the CUDA
  // worker, until it has kernel hosts) reports a forbidden call itself.
  std::optional<nlohmann::json> result, fatal, last_call, violation;
  // The first call at a hidden shape: from then on the candidate's process
  // has seen those sizes, and whatever it prints, throws or computes may
  // carry them (the feedback of any failure is redacted).
  std::optional<nlohmann::json> first_hidden_call;
  std::string stage;
  int ignored = 0;
};

// The judge's event lines; a line without the evaluation's nonce is not the
// judge's (nothing else should write there: counted and ignored).
Events parse_events(const std::string& text, const std::string& nonce) {
  Events ev;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("nonce") || !j["nonce"].is_string() ||
        j["nonce"].get<std::string>() != nonce || !j.contains("event") || !j["event"].is_string()) {
      ++ev.ignored;
      continue;
    }
    const std::string e = j["event"].get<std::string>();
    if (e == "result" && !ev.result) ev.result = j;
    else if (e == "fatal") ev.fatal = j;
    else if (e == "call") {
      if (!ev.first_hidden_call && j.value("hidden", false)) ev.first_hidden_call = j;
      ev.last_call = j;
    }
    else if (e == "sees") {
      // A process of the candidate's that can read a hidden shape's size
      // from its start is about to start (the second one, whose arena has
      // room for a hidden shape beyond the first's: judge/space.hpp,
      // arena_size; judge/session.cpp).
      if (!ev.first_hidden_call) ev.first_hidden_call = j;
    }
    else if (e == "violation") ev.violation = j;
    else if (e == "stage" && j.contains("stage") && j["stage"].is_string()) ev.stage = j["stage"].get<std::string>();
  }
  return ev;
}


}  // namespace

void NativeBackend::Impl::on_eval_done(Job& j, sb::Finished& f) {
  (j.timing ? evaluating_timed : evaluating_untimed)--;
  Verdict& v = j.v;
  v.worker_seconds = f.wall_seconds;
  v.exit_code = f.exit_code;
  v.signal = f.signal;
  v.output_tail = tail(f.output, kOutputTailCap);

  const Events ev = parse_events(f.result, j.nonce);
  v.stage = ev.stage == "timing" ? Stage::timing : Stage::correctness;
  std::string where;
  if (ev.last_call) {
    const auto& c = *ev.last_call;
    where = " during " + c.value("trial", std::string("?")) + " on shape " + c.value("shape", std::string("?"));
    if (c.value("hidden", false)) j.hidden_label = c.value("shape", std::string());
  }
  // A failure after a hidden shape has run (at a visible or a drawn one,
  // the candidate's process having lived through the hidden ones) is
  // redacted as one at the hidden shape: the process could fail on purpose
  // later, with the sizes in its output, its exception or its values (red
  // team 22: echo_hidden_later, wrong_after_hidden).
  if (ev.first_hidden_call) j.after_hidden = ev.first_hidden_call->value("shape", std::string("hidden"));
  // The judge is kevo's code and the candidate never reaches it: its result
  // is the verdict. What the runner saw of the whole process group (the
  // judge and its kernel hosts) comes first: the caps and the wall clock.
  if (f.outcome == sb::Outcome::output_limit) {
    v.status = Status::output_limit;
    v.message = f.result.size() >= static_cast<std::size_t>(kResultPipeCap)
                    ? "the judge's result channel overflowed (more than 1 MiB)"
                    : "printed more than " + std::to_string(opt.limits.output_kb) + " KiB (limits.output_kb)" + where;
  } else if (f.outcome == sb::Outcome::timeout) {
    v.status = Status::timeout;
    v.message = "exceeded the wall-clock limit of " + short_number(opt.limits.wall_seconds) + " s (limits.wall_seconds)" + where;
  } else if (f.outcome == sb::Outcome::killed) {
    v.status = Status::internal_error;
    v.message = "the evaluation was cancelled";
  } else if (ev.violation || (!ev.result && f.signal == SIGSYS)) {
    v.status = Status::runtime_error;
    std::string call = "(unknown)";
    if (ev.violation && ev.violation->contains("syscall") && ev.violation->at("syscall").is_number()) {
      const long nr = ev.violation->at("syscall").get<long>();
      call = std::to_string(nr);
      const std::string name = sb::forbidden_syscall_name(nr);
      if (!name.empty()) call += " (" + name + ")";
    }
    v.message = "sandbox violation: forbidden system call " + call + where;
  } else if (ev.fatal) {
    const std::string kind = ev.fatal->value("kind", std::string("?"));
    const std::string msg = ev.fatal->value("message", std::string());
    if (kind == "worker_memory") {
      v.status = Status::memory_limit;
      v.message = msg + " (limits.memory_mb = " + std::to_string(opt.limits.memory_mb) + ")";
    } else {
      v.status = Status::internal_error;
      v.message = "judge: " + kind + ": " + msg;
    }
  } else if (ev.result) {
    take_result(j, judge_result_from_json(*ev.result), f);
  } else {
    v.status = Status::internal_error;
    v.message = "the judge ended without a result (" +
                (f.outcome == sb::Outcome::signaled ? "killed by " + sb::signal_name(f.signal)
                                                    : "exit code " + std::to_string(f.exit_code)) +
                ")" + where;
  }
  if (ev.ignored > 0) v.message += " [" + std::to_string(ev.ignored) + " line(s) without the nonce were ignored]";
  finish(j);
}

void NativeBackend::Impl::take_result(Job& j, JudgeResult r, const sb::Finished& f) {
  Verdict& v = j.v;
  const Verdict& got = r.verdict;
  v.status = got.status;
  v.stage = got.stage;
  v.message = got.message;
  v.max_abs_error = got.max_abs_error;
  v.rel_l2_error = got.rel_l2_error;
  v.mismatch = got.mismatch;
  v.cand_median_ns = got.cand_median_ns;
  v.cand_iqr_ns = got.cand_iqr_ns;
  v.ref_median_ns = got.ref_median_ns;
  v.ref_iqr_ns = got.ref_iqr_ns;
  v.repeats = got.repeats;
  v.speedup = got.speedup;
  v.slot_seconds = got.slot_seconds;
  v.device = got.device;
  v.profile = got.profile;
  v.max_rss_kb = got.max_rss_kb > 0 ? got.max_rss_kb : f.max_rss_kb;   // the candidate's process, where known
  v.exit_code = got.exit_code;
  v.signal = got.signal;
  if (!r.isolation.is_null() && j.mode != kModeNull) isolation = r.isolation;
  // Why it was profiled, for the lineage (the profile column).
  if (!v.profile.empty() && !j.profile_reason.empty()) v.profile = "[profiled: " + j.profile_reason + "]\n" + v.profile;
  if (!v.profile.empty()) {
    // Registers and spills as the compiler reported them (-Xptxas -v).
    std::istringstream log(v.compile_log);
    for (std::string line; std::getline(log, line);)
      if (line.find("registers") != std::string::npos || line.find("spill") != std::string::npos) {
        const auto at = line.find("ptxas info");
        v.profile += "\n" + (at == std::string::npos ? line : line.substr(at));
      }
  }
  if (got.status == Status::correct && !j.timing) v.stage = Stage::done;
  if (r.device_error && health) health->device_error();
  j.mismatch_hidden = r.mismatch_hidden;
  if (j.mismatch_hidden && v.mismatch) j.hidden_label = v.mismatch->shape;
  ++stats.worker_results;
  stats.worker_wall_seconds += f.wall_seconds;
  stats.worker_inner_seconds += r.worker_ns * 1e-9;
  collect_flavour_stats(r.flavour);
  if (v.status == Status::pending) {
    v.status = Status::internal_error;
    v.message = "judge: a result without a status";
  }
}

void NativeBackend::Impl::collect_flavour_stats(const nlohmann::json& fl) {
  if (const auto ph = fl.find("phases"); ph != fl.end() && ph->is_object())
    for (const auto& [name, seconds] : ph->items())
      if (seconds.is_number()) stats.worker_phase_seconds[name] += seconds.get<double>();
  if (const auto tl = fl.find("timeline");
      tl != fl.end() && tl->is_object() && stats.worker_timelines.size() < Stats::kMaxTimelines) {
    nlohmann::json t = *tl;
    t["slot_intervals"] = fl.value("slot_intervals", nlohmann::json::array());
    t["slot_shared_intervals"] = fl.value("slot_shared_intervals", nlohmann::json::array());
    stats.worker_timelines.push_back(std::move(t));
  }
  if (const double grew = fl.value("pool_growth_mib", 0.0); grew > 0) {
    ++stats.workers_pool_grew;
    stats.pool_growth_mib += grew;
  }
  for (auto [key, into] : {std::pair{"slot_intervals", &stats.slot_intervals},
                           std::pair{"slot_shared_intervals", &stats.slot_shared_intervals}})
    if (const auto si = fl.find(key); si != fl.end() && si->is_array())
      for (const auto& iv : *si)
        if (iv.is_array() && iv.size() == 2 && iv[0].is_number() && iv[1].is_number() &&
            into->size() < Stats::kMaxSlotIntervals)
          into->emplace_back(iv[0].get<double>(), iv[1].get<double>());
}

void NativeBackend::Impl::finish(Job& j) {
  j.state = State::done;
  if (j.compile_only) return;   // prepare() reads it; pending means it compiled
  if (j.v.status == Status::pending) {
    j.v.status = Status::internal_error;
    j.v.message = "no verdict was reached";
  }
  j.v.message = clean_text(j.v.message);
  // After a hidden shape, every failure's feedback is redacted (but
  // `forbidden`'s, which keeps kevo's finding: verdict_feedback). A
  // `forbidden` verdict is never at a shape: the judge finds the library
  // after the protocol, whatever shape the last call was at (a hidden one:
  // they come last).
  const HiddenRun run{j.v.status == Status::forbidden ? std::string() : j.hidden_label, j.after_hidden};
  j.v.feedback = clean_text(verdict_feedback(j.v, *j.task, run));
  if (!j.internal) {
    ready.push_back(EvalResult{j.request_id, std::move(j.v)});
    jobs.erase(j.key);
  }
}

void NativeBackend::Impl::drive_until_done(const std::vector<std::uint64_t>& keys) {
  for (;;) {
    schedule();
    bool all = true;
    for (auto k : keys) all = all && jobs.at(k).state == State::done;
    if (all) return;
    for (auto& f : runner.poll(std::chrono::milliseconds(200))) handle(f);
  }
}

// ---------------------------------------------------------------------------

NativeBackend::NativeBackend(NativeOptions options) : Backend(options.flavour.name), impl_(std::make_unique<Impl>(std::move(options))) {}
NativeBackend::~NativeBackend() = default;

const NativeOptions& NativeBackend::options() const { return impl_->opt; }
NativeBackend::Stats NativeBackend::stats() const { return impl_->stats; }

BackendNeeds NativeBackend::do_needs() const {
  return BackendNeeds{impl_->opt.flavour.accelerator, impl_->opt.compile_jobs, impl_->opt.eval_jobs};
}

std::size_t NativeBackend::do_wanted() const {
  const std::size_t want = 2 * static_cast<std::size_t>(impl_->opt.compile_jobs) + static_cast<std::size_t>(impl_->opt.eval_jobs);
  const std::size_t have = impl_->pending_candidates();
  return have >= want ? 0 : want - have;
}

void NativeBackend::do_submit(EvalRequest request) {
  Impl& m = *impl_;
  auto it = m.prepared.find(request.task->manifest_path.string());
  if (it == m.prepared.end())
    throw Failure(name() + " backend: task '" + request.task->name + "' was not prepared by this backend");
  Impl::Job j;
  j.request_id = request.id;
  j.task = std::move(request.task);
  j.source = std::move(request.source);
  j.seed = request.seed;
  j.profile_request = std::move(request.profile);
  j.ref_so = it->second;
  m.add(std::move(j));
}

std::vector<EvalResult> NativeBackend::do_poll(std::chrono::milliseconds max_wait) {
  Impl& m = *impl_;
  const auto until = Clock::now() + max_wait;
  for (;;) {
    m.schedule();
    if (!m.ready.empty() || m.runner.running() == 0) break;
    const auto now = Clock::now();
    if (now >= until) break;
    for (auto& f : m.runner.poll(std::chrono::duration_cast<std::chrono::milliseconds>(until - now))) m.handle(f);
  }
  m.schedule();   // keep the slots busy while the caller works
  std::vector<EvalResult> out = std::move(m.ready);
  m.ready.clear();
  return out;
}

void NativeBackend::do_cancel_all() {
  Impl& m = *impl_;
  m.runner.kill_all();
  m.jobs.clear();
  m.compile_q.clear();
  m.eval_q.clear();
  m.by_proc.clear();
  m.compile_waiters.clear();
  m.ready.clear();
  m.compiling = m.evaluating_timed = m.evaluating_untimed = 0;
}

NativeBackend::Impl::Internal::~Internal() {
  // On any exit (also a throw): internal jobs still running are killed
  // and forgotten; none of them reaches the engine.
  for (auto k : keys) {
    for (auto it = m.by_proc.begin(); it != m.by_proc.end();) {
      if (it->second == k) {
        m.runner.kill(it->first);
        it = m.by_proc.erase(it);
      } else {
        ++it;
      }
    }
    auto jt = m.jobs.find(k);
    if (jt != m.jobs.end() && jt->second.state != State::done) {
      if (jt->second.state == State::compiling) {
        --m.compiling;
        // Candidates waiting for this compile go back to the queue.
        auto w = m.compile_waiters.find(jt->second.so_key);
        if (w != m.compile_waiters.end()) {
          for (auto other : w->second) {
            if (std::find(keys.begin(), keys.end(), other) != keys.end()) continue;
            m.jobs.at(other).state = State::compile_queued;
            m.compile_q.push_back(other);
          }
          m.compile_waiters.erase(w);
        }
      }
      if (jt->second.state == State::evaluating) (jt->second.timing ? m.evaluating_timed : m.evaluating_untimed)--;
    }
    std::erase(m.compile_q, k);
    std::erase(m.eval_q, k);
    for (auto& [key, w] : m.compile_waiters) std::erase(w, k);
    m.jobs.erase(k);
  }
}

void NativeBackend::do_prepare(const Task& task) {
  Impl& m = *impl_;
  if (m.prepared.count(task.manifest_path.string())) return;
  const std::string manifest = task.manifest_path.string();
  // Internal jobs point at the caller's task only while prepare() runs.
  std::shared_ptr<const Task> tp(&task, [](const Task*) {});
  const std::uint64_t seed = fnv1a64(task.name + "/prepare");

  Impl::Internal internal{m, {}};
  std::vector<std::uint64_t>& mine = internal.keys;

  auto compile_job = [&](const std::string& source, bool reference) {
    Impl::Job j;
    j.internal = true;
    j.compile_only = true;
    j.reference = reference;
    j.task = tp;
    j.source = source;
    j.seed = seed;
    mine.push_back(m.add(std::move(j)));
    return mine.back();
  };
  const std::uint64_t ref_c = compile_job(task.reference_source, true);
  const std::uint64_t seed_c = compile_job(task.seed_source, false);
  m.drive_until_done({ref_c, seed_c});

  // A compile-only job that succeeded is still pending; one that failed has
  // its compile_error (or timeout) verdict.
  for (auto k : {ref_c, seed_c})
    if (m.jobs.at(k).v.status == Status::internal_error)
      throw Failure(name() + " backend: preparing task '" + task.name + "': " + m.jobs.at(k).v.message);
  const Verdict& rc = m.jobs.at(ref_c).v;
  if (rc.status != Status::pending)
    throw InputError(manifest, "/reference",
                     "a reference source that compiles with " + m.compiler_path + "; it gave " +
                         std::string(to_string(rc.status)) + ": " + rc.message + "\n" +
                         first_lines(rc.compile_log, 30, 3000));
  const fs::path ref_so = m.jobs.at(ref_c).so_path;
  const Verdict& sc = m.jobs.at(seed_c).v;
  if (sc.status != Status::pending)
    throw InputError(manifest, "/seed",
                     "a seed source that compiles with " + m.compiler_path + "; it gave " +
                         std::string(to_string(sc.status)) + ": " + sc.message + "\n" +
                         first_lines(sc.compile_log, 30, 3000));

  if (!prepare_checks()) {
    m.prepared[manifest] = ref_so;
    return;
  }

  auto eval_job = [&](const std::string& mode, const std::string& null_kind, const std::string& source) {
    Impl::Job j;
    j.internal = true;
    j.task = tp;
    j.seed = seed;
    j.mode = mode;
    j.null_kind = null_kind;
    j.timing = false;
    j.ref_so = ref_so;
    j.source = source;
    if (mode == kModeSelfCheck) {
      j.so_path = ref_so;
      j.state = Impl::State::eval_queued;
    } else if (mode == kModeNull) {
      j.state = Impl::State::eval_queued;
    }
    mine.push_back(m.add(std::move(j)));
    return mine.back();
  };
  const std::uint64_t self = eval_job(kModeSelfCheck, "", task.reference_source);
  const std::vector<std::string> null_kinds = {"zeros", "copy", "other_seed"};
  std::vector<std::uint64_t> nulls;
  for (const auto& k : null_kinds) nulls.push_back(eval_job(kModeNull, k, ""));
  const std::uint64_t seed_j = eval_job(kModeJudge, "", task.seed_source);
  std::vector<std::uint64_t> all = nulls;
  all.push_back(self);
  all.push_back(seed_j);
  m.drive_until_done(all);

  auto check_worker = [&](const Verdict& v) {
    if (v.status == Status::internal_error)
      throw Failure(name() + " backend: preparing task '" + task.name + "': " + v.message);
  };
  const Verdict& sv = m.jobs.at(self).v;
  check_worker(sv);
  if (sv.status != Status::correct)
    throw InputError(manifest, "/reference",
                     "a reference that passes its own checks (deterministic, writes every output, leaves its "
                     "inputs alone, within backend.cpu.limits); it gave " +
                         std::string(to_string(sv.status)) + ": " + sv.message);
  for (std::size_t i = 0; i < nulls.size(); ++i) {
    const Verdict& nv = m.jobs.at(nulls[i]).v;
    check_worker(nv);
    if (nv.status == Status::correct)
      throw InputError(manifest, "/tolerance",
                       "tolerances tight enough that null candidate '" + null_kinds[i] +
                           "' fails (it was judged correct: max abs error " + short_number(nv.max_abs_error) +
                           ", relative L2 error " + short_number(nv.rel_l2_error) + ")");
  }
  const Verdict& dv = m.jobs.at(seed_j).v;
  check_worker(dv);
  if (dv.status != Status::correct)
    throw InputError(manifest, "/seed",
                     "a seed that is judged correct; it gave " + std::string(to_string(dv.status)) + ": " + dv.message);
  m.prepared[manifest] = ref_so;
}

std::vector<BaselineVerdict> NativeBackend::do_judge_baselines(const Task& task, std::uint64_t seed) {
  Impl& m = *impl_;
  const auto it = m.prepared.find(task.manifest_path.string());
  if (it == m.prepared.end())
    throw Failure(name() + " backend: task '" + task.name + "' was not prepared by this backend");
  std::shared_ptr<const Task> tp(&task, [](const Task*) {});   // lives while this call runs
  Impl::Internal internal{m, {}};
  // All at once: they compile in parallel and their timings take the
  // evaluation slots (the GPU's timing slot) one at a time, like candidates.
  for (const Task::SourceBaseline& b : task.source_baselines) {
    Impl::Job j;
    j.internal = true;
    j.task = tp;
    j.source = b.source;
    j.link = b.link;
    j.seed = seed;
    j.ref_so = it->second;
    internal.keys.push_back(m.add(std::move(j)));
  }
  m.drive_until_done(internal.keys);
  std::vector<BaselineVerdict> out;
  for (std::size_t i = 0; i < task.source_baselines.size(); ++i)
    out.push_back({task.source_baselines[i].name, std::move(m.jobs.at(internal.keys[i]).v)});
  return out;
}

nlohmann::json NativeBackend::do_guarantees() const {
  const nlohmann::json& iso = impl_->isolation;
  if (iso.is_null()) return nullptr;
  const sb::IsolationReport r = sb::IsolationReport::from_json(iso);
  std::vector<std::string> missing = r.missing();
  if (!impl_->compiler_unconfined.empty())
    missing.push_back("compilers confined to their build directory and the system's trees: " +
                      impl_->compiler_unconfined);
  return {{"isolation", iso},
          {"missing", missing},
          {"compiler_writes_confined", impl_->compiler_unconfined.empty()},
          {"compiler_reads_confined", impl_->compiler_unconfined.empty()}};
}

std::unique_ptr<Backend> make_native_backend(NativeOptions options) {
  return std::make_unique<NativeBackend>(std::move(options));
}

}  // namespace kevo::native
