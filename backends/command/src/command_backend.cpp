// The command backend's pipeline: a compile stage (cached builds, parallel
// compiles), then the evaluator, one process per request or persistent
// ones per slot, driven through the sandbox runner; every answer checked
// (protocol.cpp). docs/command-backend.md.
#include "kevo/command/command_backend.hpp"

#include "kevo/core/ncu_summary.hpp"
#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"
#include "kevo/core/rng.hpp"
#include "kevo/core/text.hpp"
#include "kevo/core/verdict_text.hpp"
#include "kevo/sandbox/isolation.hpp"
#include "kevo/sandbox/runner.hpp"
#include "kevo/sandbox/scratch_dir.hpp"

#include "space.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <utility>

namespace kevo::command {

namespace fs = std::filesystem;
namespace sb = kevo::sandbox;
namespace jd = kevo::native::judge;
using Clock = std::chrono::steady_clock;

namespace {

// What a confined command may read besides kevo's folders and the paths
// its argv names: the system's trees, the dynamic linker's, OpenCL's and
// Python's configuration, the machine's CPU and memory description, and the
// program's folder (and its prefix for a bin/ folder: a virtual
// environment). Not the rest of /proc and /sys, /home or the task folders.
std::vector<std::string> confined_read_dirs(const std::string& program) {
  std::vector<std::string> dirs = sb::system_read_dirs();
  for (const char* extra : {"/etc/OpenCL", "/etc/localtime", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group",
                            // the machine's shape, which OpenCL runtimes read (PoCL fails without)
                            "/proc/cpuinfo", "/proc/meminfo", "/sys/devices/system/cpu", "/sys/devices/system/node"})
    dirs.emplace_back(extra);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/etc", ec))
    if (e.path().filename().string().rfind("python", 0) == 0) dirs.push_back(e.path().string());
  const std::string found = sb::find_in_path(program);
  if (!found.empty()) {
    sb::add_program_dirs(dirs, found);
    sb::add_program_dirs(dirs, fs::weakly_canonical(found, ec));
  }
  return dirs;
}

constexpr std::size_t kCompileLogCap = 16 * 1024;
constexpr std::size_t kOutputTailCap = 4 * 1024;
constexpr const char* kBuiltMarker = ".kevo-built";

std::string substitute(std::string s, const std::map<std::string, std::string>& values) {
  for (const auto& [k, v] : values) s = replace_all(std::move(s), k, v);
  return s;
}

void write_file(const fs::path& p, const std::string& content) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
  f.close();
  if (!f) throw Failure("command backend: cannot write " + p.string());
}

std::string seconds_text(double s) { return short_number(s) + " s"; }

// What a verdict keeps when kevo's comparison replaces the evaluator's
// word: the build and the process's facts, nothing judged.
Verdict run_facts(const Verdict& e) {
  Verdict v;
  v.compile_seconds = e.compile_seconds;
  v.compile_cached = e.compile_cached;
  v.compile_log = e.compile_log;
  v.worker_seconds = e.worker_seconds;
  v.output_tail = e.output_tail;
  v.device = e.device;
  v.exit_code = e.exit_code;
  v.max_rss_kb = e.max_rss_kb;
  return v;
}

// The inputs of a null candidate "other_seed" come from this seed instead
// of the judgement's.
constexpr std::uint64_t kOtherSeed = 0x9E3779B97F4A7C15ULL;

// Every buffer of a request's calls in one file ("in") and back in another
// of the same layout ("out"), each at a multiple of kIoAlign: two files per
// request, however many calls (creating files is what costs).
constexpr std::size_t kIoAlign = 64;

}  // namespace

class CommandBackend final : public Backend {
 public:
  explicit CommandBackend(CommandOptions o);
  ~CommandBackend() override {
    runner_.kill_all();
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }
  CommandStats stats() const { return stats_; }

 protected:
  BackendNeeds do_needs() const override {
    BackendNeeds n;
    n.accelerator = opt_.run.accelerator;
    n.compile_slots = opt_.compile ? opt_.compile->jobs : 1;
    n.eval_slots = opt_.run.jobs;
    return n;
  }
  void do_prepare(const Task& task) override;
  std::size_t do_wanted() const override {
    const std::size_t want = 2 * static_cast<std::size_t>(do_needs().compile_slots) + static_cast<std::size_t>(opt_.run.jobs);
    std::size_t have = 0;
    for (const auto& [k, j] : jobs_) have += !j.internal;
    return have >= want ? 0 : want - have;
  }
  void do_submit(EvalRequest request) override;
  std::vector<EvalResult> do_poll(std::chrono::milliseconds max_wait) override;
  void do_cancel_all() override;
  nlohmann::json do_guarantees() const override {
    if (opt_.bundled) {
      if (isolation_.is_null()) return nullptr;   // nothing judged yet
      const auto rep = sandbox::IsolationReport::from_json(isolation_);
      return {{"missing", rep.missing()}, {"notes", rep.notes}, {"report", isolation_}};
    }
    return {{"missing",
             {"seccomp, namespaces and Landlock around the evaluator: it is the user's program and starts its own "
              "tools; candidates' isolation inside it is the evaluator's (docs/command-backend.md)"}},
            {"evaluator", opt_.run.argv.front()}};
  }

 private:
  enum class State { compile_queued, compiling, compile_waiting, run_queued, running, done };
  struct Job {
    std::uint64_t key = 0;
    bool internal = false;
    std::uint64_t request_id = 0;
    std::shared_ptr<const Task> task;
    std::string source;
    bool is_reference = false;   // the task's reference: built, not judged
    std::uint64_t seed = 0;
    std::string mode = "judge", null_kind;
    bool timing = true, profile = false;
    std::string profile_reason;        // why a profile was asked for ("" = none)
    fs::path source_path, build_dir;   // build "" = no compile stage
    std::string build_key;
    sb::ScratchDir own;                // the job's folder (its source, an uncached build)
    sb::ScratchDir proc_scratch;       // the running process's {scratch}
    std::string nonce;
    std::vector<RequestShape> shapes;
    std::optional<AnswerReader> reader;
    std::uint64_t proc = 0;
    int slot = -1;
    std::size_t taken = 0;             // persistent: bytes of stdout read for this request
    bool resent = false;               // persistent: sent again to a fresh process once
    bool breached = false;             // the evaluator broke the protocol or failed (retires it)
    std::string stderr_text;
    Clock::time_point sent;
    Verdict v;
    State state = State::compile_queued;
    // judge = "kevo": the calls of the judgement, the files they are
    // exchanged through, and which request runs (0: the reference's, 1: the
    // candidate's, or the reference on other inputs for null other_seed).
    struct Call {
      std::size_t shape = 0;   // index into shapes
      jd::Case c;
      std::string trial, tag;
      int stress = -1;   // index into task.stress
      jd::ArgSet orig;   // inputs, outputs poisoned
      jd::ArgSet want;   // the reference's buffers after its call
    };
    std::vector<Call> calls;
    int phase = 0;
    jd::Poison poison;
    jd::InputKey input_key;   // the judgement's secret over its inputs (judge = "kevo")
    fs::path io;
    std::size_t io_bytes = 0;
    nlohmann::json io_files;
    double earlier_seconds = 0.0;   // the reference request's time
    std::string hidden_label;       // the hidden shape a kevo-found mismatch names
  };
  struct Slot {
    std::uint64_t proc = 0;
    int served = 0;
    std::set<std::string> nonces;   // of the requests this process was sent
    std::uint64_t job = 0;
    sb::ScratchDir scratch;
  };

  std::uint64_t add(Job j);
  void schedule();
  void start_compile(Job& j);
  void start_run(Job& j);
  void on_compile_done(Job& j, sb::Finished& f);
  void on_run_finished(Job& j, sb::Finished& f);
  void on_persistent_output(Job& j);
  void conclude(Job& j, const sb::Finished* f);
  void retire(Slot& s);
  void finish(Job& j);
  void handle(sb::Finished& f);
  void drive(const std::vector<std::uint64_t>& keys);
  nlohmann::json request_for(Job& j);
  // judge = "kevo"
  nlohmann::json kevo_calls(Job& j, bool timing);
  std::string read_calls(const Job& j, std::vector<jd::ArgSet>& out) const;
  void kevo_compare(Job& j, const std::vector<jd::ArgSet>& got, bool check_inputs);
  std::vector<jd::ArgSet> null_outputs(const Job& j) const;
  bool kevo_step(Job& j);   // true: the job goes on to its next request
  void after_request(Job& j);
  std::vector<std::string> env() const;
  std::map<std::string, std::string> subst(const Job& j, const fs::path& scratch) const;
  // A command of the config for job j, run in `scratch` (cwd and TMPDIR).
  sb::Spec spec_for(const std::vector<std::string>& argv, const Job& j, const fs::path& scratch) const;
  const fs::path* reference_build(const Task& t) const;

  CommandOptions opt_;
  sb::Runner runner_;
  fs::path scratch_base_;
  sb::ScratchDir work_;
  std::string tool_version_;
  std::map<std::uint64_t, Job> jobs_;
  std::uint64_t next_key_ = 1;
  std::deque<std::uint64_t> compile_q_, run_q_;
  int compiling_ = 0;
  std::map<std::uint64_t, std::uint64_t> by_proc_;   // compile or one-shot run process -> job
  std::set<std::uint64_t> retired_;                  // persistent processes killed on purpose
  std::map<std::string, std::vector<std::uint64_t>> compile_waiters_;
  std::vector<Slot> slots_;
  std::vector<EvalResult> ready_;
  bool internal_done_ = false;   // a conformance job finished (do_poll returns)
  std::uint64_t profiles_counted_ = 0;   // candidates submitted, for profile_every
  // manifest path -> (reference source path, reference build dir)
  std::map<std::string, std::pair<fs::path, fs::path>> prepared_;
  CommandStats stats_;
  // run.accelerator: the host-wide lock of this rank's device, held while
  // a request of this backend runs (every kevo process of the host takes
  // the same file), so the device judges one candidate at a time.
  int lock_fd_ = -1;
  bool locked_ = false;
  nlohmann::json isolation_;   // a bundled evaluator's last report
  // "confine": what both commands may read besides their argv's paths
  // (computed once), and the tools' cache folder ("" = none).
  std::vector<std::string> confine_reads_;
  fs::path tools_cache_;
  bool take_device();
  void release_device();
};

CommandBackend::CommandBackend(CommandOptions o) : Backend(o.backend_name), opt_(std::move(o)) {
  // The engine holds what candidates must not read (API keys in its
  // environment, the tasks' hidden shapes): no process of the same user,
  // evaluators included, may trace it or read its /proc files.
  sb::set_non_dumpable();
  if (opt_.confine.on) {
    for (const std::vector<std::string>* argv : {opt_.compile ? &opt_.compile->argv : nullptr, &opt_.run.argv}) {
      if (!argv) continue;
      const auto dirs = confined_read_dirs(substitute(argv->front(), {{"{config_dir}", opt_.config_dir.string()}}));
      confine_reads_.insert(confine_reads_.end(), dirs.begin(), dirs.end());
    }
    if (opt_.compile && opt_.compile->cache && !opt_.cache_dir.empty())
      confine_reads_.push_back((fs::path(opt_.cache_dir) / "command").string());
    confine_reads_.insert(confine_reads_.end(), opt_.confine.read.begin(), opt_.confine.read.end());
    // The user's ~/.cache is out of reach: the tools' own caches (PoCL's
    // kernel cache, pyopencl's) go to a folder of kevo's cache instead, so
    // that a restarted evaluator does not rebuild every kernel (1.4-1.7 s
    // against 0.5 s a request, measured).
    if (!opt_.cache_dir.empty() && !opt_.env.contains("XDG_CACHE_HOME")) {
      std::error_code ec;
      const fs::path tools = fs::path(opt_.cache_dir) / "command-tools";
      fs::create_directories(tools, ec);
      if (!ec) tools_cache_ = tools;
    }
  }
  scratch_base_ = opt_.scratch_dir.empty() ? sb::default_scratch_base() : fs::path(opt_.scratch_dir);
  work_ = sb::ScratchDir::create(scratch_base_, "kevo-command");
  slots_.resize(static_cast<std::size_t>(opt_.run.persistent ? opt_.run.jobs : 0));
  if (opt_.run.accelerator) {
    const char* d = std::getenv("KEVO_DEVICE_INDEX");
    const fs::path dir = opt_.run.lock_dir.empty() ? sb::default_scratch_base() : fs::path(opt_.run.lock_dir);
    const fs::path file = dir / ("kevo-command-device-" + std::string(d && *d ? d : "0") + ".lock");
    lock_fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lock_fd_ < 0)
      throw Failure("command backend: cannot open the accelerator's lock " + file.string() + ": " + std::strerror(errno));
  }
  if (opt_.compile && !opt_.compile->version_argv.empty()) {
    sb::ScratchDir s = sb::ScratchDir::create(scratch_base_, "kevo-cmd-version");
    sb::Spec spec;
    for (const auto& a : opt_.compile->version_argv)
      spec.argv.push_back(substitute(a, {{"{config_dir}", opt_.config_dir.string()}, {"{scratch}", s.path().string()}}));
    spec.env = env();
    spec.env.push_back("TMPDIR=" + s.path().string());
    spec.cwd = s.path();
    spec.limits.wall_seconds = 60;
    sb::Finished f = runner_.run(std::move(spec));
    if (f.outcome != sb::Outcome::exited || f.exit_code != 0)
      throw InputError(opt_.config_file, opt_.pointer + "/compile/version_argv",
                       "a command that prints the toolchain's version and exits 0; it ended " +
                           std::string(sb::to_string(f.outcome)) + " (exit " + std::to_string(f.exit_code) + "): " +
                           head(f.output, 400));
    tool_version_ = f.output;
  }
}

std::vector<std::string> CommandBackend::env() const {
  std::vector<std::string> e;
  for (const char* n : {"PATH", "HOME", "LANG", "KEVO_DEVICE_INDEX"})
    if (const char* v = std::getenv(n)) e.push_back(std::string(n) + "=" + v);
  for (const auto& n : opt_.pass_env)
    if (const char* v = std::getenv(n.c_str())) e.push_back(n + "=" + v);
  for (const auto& [k, v] : opt_.env) {
    std::erase_if(e, [&](const std::string& kv) { return kv.rfind(k + "=", 0) == 0; });
    e.push_back(k + "=" + v);
  }
  return e;
}

std::map<std::string, std::string> CommandBackend::subst(const Job& j, const fs::path& scratch) const {
  return {{"{source}", j.source_path.string()},
          {"{out_dir}", j.build_dir.string()},
          {"{task_dir}", j.task ? j.task->dir.string() : ""},
          {"{scratch}", scratch.string()},
          {"{config_dir}", opt_.config_dir.string()}};
}

sb::Spec CommandBackend::spec_for(const std::vector<std::string>& argv, const Job& j, const fs::path& scratch) const {
  sb::Spec spec;
  const auto values = subst(j, scratch);
  for (const auto& a : argv) spec.argv.push_back(substitute(a, values));
  spec.env = env();
  spec.env.push_back("TMPDIR=" + scratch.string());
  spec.cwd = scratch;
  spec.limits.memory_mb = opt_.memory_mb;
  if (opt_.confine.on) {
    // A persistent evaluator serves many jobs: it gets every job's folder
    // (kevo's work folder) and the build cache, not one job's.
    spec.confine_writes = true;
    spec.confine_required = true;
    spec.write_dirs = {scratch.string(), work_.path().string()};
    if (!j.build_dir.empty()) spec.write_dirs.push_back(j.build_dir.string());
    spec.write_dirs.insert(spec.write_dirs.end(), opt_.confine.write.begin(), opt_.confine.write.end());
    spec.read_dirs = confine_reads_;
    for (std::size_t i = 1; i < spec.argv.size(); ++i) {   // a file alone: a script's folder may hold the tasks
      const fs::path a = spec.argv[i];
      std::error_code ec;
      if (a.is_absolute() && fs::exists(a, ec)) spec.read_dirs.push_back(a.lexically_normal().string());
    }
    if (!tools_cache_.empty()) {
      spec.write_dirs.push_back(tools_cache_.string());
      std::erase_if(spec.env, [](const std::string& kv) { return kv.rfind("XDG_CACHE_HOME=", 0) == 0; });
      spec.env.push_back("XDG_CACHE_HOME=" + tools_cache_.string());
    }
  }
  return spec;
}

std::uint64_t CommandBackend::add(Job j) {
  j.key = next_key_++;
  j.own = sb::ScratchDir::create(work_.path(), "job");
  if (!opt_.compile || j.source.empty()) {
    // No compile stage (or nothing to build: a null candidate): the source
    // is written where the evaluator reads it.
    if (!j.source.empty()) {
      j.source_path = j.own.path() / opt_.source_file;
      write_file(j.source_path, j.source);
    }
    j.state = State::run_queued;
  } else {
    j.state = State::compile_queued;
  }
  const std::uint64_t key = j.key;
  (j.state == State::compile_queued ? compile_q_ : run_q_).push_back(key);
  jobs_.emplace(key, std::move(j));
  return key;
}

const fs::path* CommandBackend::reference_build(const Task& t) const {
  auto it = prepared_.find(t.manifest_path.string());
  return it == prepared_.end() ? nullptr : &it->second.second;
}

void CommandBackend::schedule() {
  for (auto it = compile_q_.begin(); it != compile_q_.end();) {
    Job& j = jobs_.at(*it);
    if (j.build_key.empty()) {
      std::string material = "kevo-command-build-1\n" + opt_.source_file + "\n";
      for (const auto& a : opt_.compile->argv) material += "argv " + a + "\n";
      for (const auto& e : env()) material += "env " + e + "\n";
      material += "version " + tool_version_ + "\nsource\n" + j.source;
      j.build_key = sha256_hex(material);
    }
    const bool cached = opt_.compile->cache && !opt_.cache_dir.empty();
    if (cached) {
      const fs::path dir = fs::path(opt_.cache_dir) / "command" / j.build_key;
      std::error_code ec;
      if (fs::exists(dir / kBuiltMarker, ec)) {
        j.build_dir = dir;
        j.source_path = dir / opt_.source_file;
        j.v.compile_cached = true;
        ++stats_.cache_hits;
        if (j.is_reference) {
          j.state = State::done;   // built: prepare() takes it from here
        } else {
          j.state = State::run_queued;
          run_q_.push_back(j.key);
        }
        it = compile_q_.erase(it);
        continue;
      }
    }
    if (auto w = compile_waiters_.find(j.build_key); w != compile_waiters_.end()) {
      w->second.push_back(j.key);   // the same source is being built now
      j.state = State::compile_waiting;
      it = compile_q_.erase(it);
      continue;
    }
    if (compiling_ >= opt_.compile->jobs) {
      ++it;
      continue;
    }
    compile_waiters_[j.build_key];
    it = compile_q_.erase(it);
    start_compile(j);
  }
  // Evaluations: one-shot processes up to run.jobs, or the persistent slots.
  while (!run_q_.empty()) {
    int busy = 0;
    for (const auto& [k, j] : jobs_) busy += j.state == State::running;
    if (busy >= opt_.run.jobs) break;
    if (!take_device()) break;   // another kevo process judges on this device now
    Job& j = jobs_.at(run_q_.front());
    run_q_.pop_front();
    start_run(j);
  }
}

void CommandBackend::start_compile(Job& j) {
  const bool cached = opt_.compile->cache && !opt_.cache_dir.empty();
  if (cached) {
    const fs::path root = fs::path(opt_.cache_dir) / "command";
    std::error_code ec;
    fs::create_directories(root, ec);
    j.build_dir = root / (j.build_key + ".tmp-" + random_hex(6));
  } else {
    j.build_dir = j.own.path() / "build";
  }
  std::error_code ec;
  fs::create_directories(j.build_dir, ec);
  if (ec) throw Failure("command backend: cannot create the build folder " + j.build_dir.string() + ": " + ec.message());
  j.source_path = j.build_dir / opt_.source_file;
  write_file(j.source_path, j.source);
  j.proc_scratch = sb::ScratchDir::create(scratch_base_, "kevo-cmd-compile");
  sb::Spec spec = spec_for(opt_.compile->argv, j, j.proc_scratch.path());
  spec.limits.wall_seconds = opt_.compile->wall_seconds;
  spec.limits.output_bytes = std::max<std::int64_t>(opt_.output_kb * 1024, 64 * 1024);
  j.state = State::compiling;
  j.v.stage = Stage::compile;
  ++compiling_;
  ++stats_.compiles;
  try {
    by_proc_[runner_.start(std::move(spec))] = j.key;
  } catch (const std::exception& e) {
    --compiling_;
    j.v.status = Status::internal_error;
    j.v.message = std::string("the compile command could not be started: ") + e.what();
    sb::Finished none;
    on_compile_done(j, none);
  }
}

void CommandBackend::on_compile_done(Job& j, sb::Finished& f) {
  const std::string key = j.build_key;
  std::vector<std::uint64_t> waiters;
  if (auto w = compile_waiters_.find(key); w != compile_waiters_.end()) {
    waiters = std::move(w->second);
    compile_waiters_.erase(w);
  }
  if (j.v.status == Status::pending) {
    j.v.compile_seconds = f.wall_seconds;
    j.v.compile_log = head(f.output, kCompileLogCap);
    if (f.outcome == sb::Outcome::exited && f.exit_code == 0) {
      if (opt_.compile->cache && !opt_.cache_dir.empty()) {
        const fs::path final_dir = fs::path(opt_.cache_dir) / "command" / key;
        write_file(j.build_dir / kBuiltMarker, "built\n");
        std::error_code ec;
        fs::rename(j.build_dir, final_dir, ec);
        if (ec) fs::remove_all(j.build_dir, ec);   // another process built it meanwhile
        j.build_dir = final_dir;
        j.source_path = final_dir / opt_.source_file;
      }
    } else {
      j.v.status = f.outcome == sb::Outcome::timeout ? Status::timeout : Status::compile_error;
      j.v.message = f.outcome == sb::Outcome::timeout
                        ? "the compile command exceeded compile.wall_seconds (" + seconds_text(opt_.compile->wall_seconds) + ")"
                    : f.outcome == sb::Outcome::exited ? "the compile command exited with " + std::to_string(f.exit_code)
                    : f.outcome == sb::Outcome::output_limit ? "the compile command printed more than limits.output_kb"
                                                             : "the compile command was killed by " + sb::signal_name(f.signal);
      std::error_code ec;
      fs::remove_all(j.build_dir, ec);
    }
  }
  j.proc_scratch.remove();
  auto next = [&](Job& x) {
    if (x.is_reference && x.v.status == Status::pending) {
      x.state = State::done;   // a reference is built here, judged by self_check
    } else if (x.v.status != Status::pending) {
      finish(x);
    } else {
      x.state = State::run_queued;
      run_q_.push_back(x.key);
    }
  };
  for (auto w : waiters) {
    auto it = jobs_.find(w);
    if (it == jobs_.end()) continue;
    Job& x = it->second;
    x.build_dir = j.build_dir;
    x.source_path = j.source_path;
    x.v.status = j.v.status;
    x.v.stage = j.v.stage;
    x.v.message = j.v.message;
    x.v.compile_log = j.v.compile_log;
    x.v.compile_cached = true;
    next(x);
  }
  next(j);
}

nlohmann::json CommandBackend::request_for(Job& j) {
  j.nonce = random_hex(16);
  if (j.shapes.empty()) j.shapes = request_shapes(*j.task, j.seed);   // once: kevo's calls point into them
  RequestInfo info;
  info.nonce = j.nonce;
  info.mode = j.mode;
  info.null_kind = j.null_kind;
  info.seed = j.seed;
  info.trials = opt_.trials;
  info.timing = j.timing;
  info.timing_options = opt_.timing;
  info.wall_seconds = opt_.run.wall_seconds;
  info.profile = j.profile;
  const auto& ref = prepared_.at(j.task->manifest_path.string());
  info.reference_source = ref.first;
  info.reference_build = ref.second;
  bool candidate = j.mode == "judge" || j.mode == "self_check";
  if (opt_.kevo_judges) {
    // The reference's request first, then the candidate's (a null
    // "other_seed": the reference again, on other inputs).
    candidate = candidate && j.phase == 1;
    info.mode = "run";
    info.program = candidate ? "candidate" : "reference";
    info.timing = candidate && j.timing;
    info.profile = candidate && j.profile;
    info.calls = kevo_calls(j, info.timing);
    info.files = j.io_files;
  }
  if (candidate && j.mode == "self_check") {
    info.candidate_source = ref.first;
    info.candidate_build = ref.second;
  } else if (candidate) {
    info.candidate_source = j.source_path;
    info.candidate_build = j.build_dir;
  }
  j.reader.emplace(answer_rules(*j.task, j.shapes, j.nonce, info.timing, opt_));
  return make_request(*j.task, j.shapes, info);
}

// ---- judge = "kevo" ---------------------------------------------------------

nlohmann::json CommandBackend::kevo_calls(Job& j, bool timing) {
  const Task& task = *j.task;
  jd::Space& space = jd::host_space();
  if (j.calls.empty()) {
    // Every shape in every trial, then every stress distribution on every
    // shape, as the native judge does; inputs fresh per call.
    j.input_key = jd::InputKey::draw();   // the seed alone does not give the inputs
    j.poison = jd::keyed_poison(j.input_key, j.seed);
    std::vector<std::pair<std::size_t, jd::Case>> cases;
    std::size_t counts[3] = {0, 0, 0};
    for (const auto& rs : j.shapes) {
      jd::Case c;
      c.shape = &rs.shape;
      c.kind = rs.kind == "visible" ? jd::Case::Kind::visible : rs.kind == "hidden" ? jd::Case::Kind::hidden : jd::Case::Kind::drawn;
      c.index = counts[static_cast<int>(c.kind)]++;
      cases.emplace_back(cases.size(), c);
    }
    for (int t = 0; t < opt_.trials; ++t)
      for (const auto& [i, c] : cases) j.calls.push_back({i, c, "trial " + std::to_string(t + 1), "trial" + std::to_string(t), -1, {}, {}});
    for (std::size_t k = 0; k < task.stress.size(); ++k)
      for (const auto& [i, c] : cases)
        j.calls.push_back({i, c, "stress " + task.stress[k].name, "stress-" + task.stress[k].name, static_cast<int>(k), {}, {}});
  }
  space.set_poison(j.poison);
  space.set_input_key(j.input_key);
  const bool other = j.mode == "null" && j.phase == 1;
  std::error_code ec;
  if (!j.io.empty()) fs::remove_all(j.io, ec);
  // A fresh folder per request: nothing of the reference's request is left
  // where the candidate's runs.
  j.io = j.own.path() / ("io-" + random_hex(6));
  fs::create_directories(j.io, ec);
  if (ec) throw Failure("command backend: cannot create " + j.io.string() + ": " + ec.message());
  nlohmann::json calls = nlohmann::json::array();
  const fs::path in_path = j.io / "in.bin";
  std::ofstream in(in_path, std::ios::binary | std::ios::trunc);
  std::size_t offset = 0;
  static const char zeros[kIoAlign] = {};
  for (std::size_t i = 0; i < j.calls.size(); ++i) {
    auto& call = j.calls[i];
    const jd::DistributionOverride dist = [&](const Arg& a) -> const Distribution* {
      if (call.stress < 0) return nullptr;
      for (const auto& [index, d] : task.stress[static_cast<std::size_t>(call.stress)].inputs)
        if (task.args[index].name == a.name) return &d;
      return nullptr;
    };
    if (call.orig.buf.empty()) call.orig = space.make_inputs(task, call.c, j.seed, call.tag, dist);
    jd::ArgSet other_inputs;
    if (other) other_inputs = space.make_inputs(task, call.c, j.seed ^ kOtherSeed, call.tag, dist);
    const jd::ArgSet& a = other ? other_inputs : call.orig;
    nlohmann::json args = nlohmann::json::object();
    for (std::size_t k = 0; k < task.args.size(); ++k) {
      if (!task.args[k].is_buffer()) continue;
      const std::size_t bytes = a.buf[k].bytes();
      in.write(static_cast<const char*>(a.buf[k].data()), static_cast<std::streamsize>(bytes));
      const std::size_t pad = (kIoAlign - bytes % kIoAlign) % kIoAlign;
      in.write(zeros, static_cast<std::streamsize>(pad));
      args[task.args[k].name] = {{"offset", offset}, {"bytes", bytes}};
      offset += bytes + pad;
    }
    const bool time = timing && call.c.timed() && call.stress < 0 && call.trial == "trial 1";
    calls.push_back({{"shape", j.shapes[call.shape].label}, {"trial", call.trial}, {"time", time}, {"args", std::move(args)}});
  }
  in.close();
  if (!in) throw Failure("command backend: cannot write " + in_path.string());
  j.io_bytes = offset;
  j.io_files = {{"in", in_path.string()}, {"out", (j.io / "out.bin").string()}};
  return calls;
}

std::string CommandBackend::read_calls(const Job& j, std::vector<jd::ArgSet>& out) const {
  out.clear();
  const fs::path path = j.io / "out.bin";
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return "it did not write its out file " + path.filename().string() + " (" + ec.message() + ")";
  if (size != j.io_bytes)
    return "its out file holds " + std::to_string(size) + " bytes, expected " + std::to_string(j.io_bytes) + " (the in file's layout)";
  std::ifstream f(path, std::ios::binary);
  for (std::size_t i = 0; i < j.calls.size(); ++i) {
    jd::ArgSet a = jd::allocate_like(j.calls[i].orig);
    for (std::size_t k = 0; k < j.task->args.size(); ++k) {
      if (!j.task->args[k].is_buffer()) continue;
      const std::size_t bytes = a.buf[k].bytes();
      f.read(static_cast<char*>(a.buf[k].data()), static_cast<std::streamsize>(bytes));
      f.ignore(static_cast<std::streamsize>((kIoAlign - bytes % kIoAlign) % kIoAlign));
    }
    if (!f) return "cannot read its out file " + path.filename().string();
    out.push_back(std::move(a));
  }
  return "";
}

std::vector<jd::ArgSet> CommandBackend::null_outputs(const Job& j) const {
  // zeros: every output 0; copy: the first input converted element-wise
  // into each output (wrapping), an inout keeping its input.
  const Task& task = *j.task;
  jd::Space& space = jd::host_space();
  std::size_t first_in = task.args.size();
  for (std::size_t k = 0; k < task.args.size() && first_in == task.args.size(); ++k)
    if (task.args[k].is_input() && task.args[k].is_buffer()) first_in = k;
  std::vector<jd::ArgSet> got;
  for (const auto& call : j.calls) {
    jd::ArgSet a = space.clone_for_call(task, call.orig, false);
    for (std::size_t k = 0; k < task.args.size(); ++k) {
      const Arg& arg = task.args[k];
      if (!arg.is_output() || (j.null_kind == "copy" && arg.role == Role::inout)) continue;
      if (j.null_kind == "copy" && first_in < task.args.size())
        space.convert(arg.dtype, a.buf[k], a.n[k], task.args[first_in].dtype, call.orig.buf[first_in], call.orig.n[first_in]);
      else
        space.zero(a.buf[k]);
    }
    got.push_back(std::move(a));
  }
  return got;
}

void CommandBackend::kevo_compare(Job& j, const std::vector<jd::ArgSet>& got, bool check_inputs) {
  const Task& task = *j.task;
  jd::Space& space = jd::host_space();
  space.set_poison(j.poison);
  Verdict& v = j.v;
  double max_abs = 0.0, rel_l2 = 0.0;
  auto wrong = [&](const Job::Call& call, std::size_t k, std::int64_t i, double expected, double got_v,
                   const std::string& trial, std::string message) {
    Mismatch m;
    m.arg = task.args[k].name;
    m.shape = call.c.label();
    m.trial = trial;
    m.flat_index = i;
    m.index = jd::multi_index(task, task.args[k], *call.c.shape, i);
    m.expected = expected;
    m.got = got_v;
    // At a hidden shape, or after one (the calls run in order in the
    // evaluator, whose process the candidate lives in: it can remember a
    // hidden shape's sizes and put them into a later, visible call's
    // values, which the feedback quotes; red team 22): the feedback says
    // only that.
    if (call.c.hidden()) {
      j.hidden_label = call.c.label();
    } else {
      for (const Job::Call& earlier : j.calls) {
        if (&earlier == &call) break;
        if (earlier.c.hidden()) {
          j.hidden_label = earlier.c.label();
          break;
        }
      }
    }
    v = run_facts(v);
    v.status = Status::wrong_answer;
    v.stage = Stage::correctness;
    v.message = std::move(message);
    v.mismatch = m;
    v.max_abs_error = max_abs;
    v.rel_l2_error = rel_l2;
  };
  for (std::size_t i = 0; i < j.calls.size(); ++i) {
    const auto& call = j.calls[i];
    const std::string where = " (" + call.trial + ", shape " + call.c.label() + ")";
    for (std::size_t k = 0; check_inputs && k < task.args.size(); ++k) {
      if (task.args[k].role != Role::in || !task.args[k].is_buffer()) continue;
      const std::size_t at = space.first_difference(got[i].buf[k], call.orig.buf[k]);
      if (at >= got[i].buf[k].bytes()) continue;
      const auto e = static_cast<std::int64_t>(at / dtype_size(task.args[k].dtype));
      const std::string index = jd::multi_index(task, task.args[k], *call.c.shape, e);
      wrong(call, k, e, space.element(task.args[k].dtype, call.orig.buf[k], e), space.element(task.args[k].dtype, got[i].buf[k], e),
            "input-modified", "the kernel modified its input '" + task.args[k].name + "' (at " + index + ", " + call.trial +
                                    ", shape " + call.c.label() + ")");
      return;
    }
    for (std::size_t k = 0; k < task.args.size(); ++k) {
      const Arg& arg = task.args[k];
      if (!arg.is_output()) continue;
      const jd::OutputDiff d = jd::diff_output(space, arg.dtype, call.want.buf[k], got[i].buf[k], call.orig.n[k], task.tolerance, true);
      max_abs = std::max(max_abs, d.max_abs);
      rel_l2 = std::max(rel_l2, d.rel_l2);
      if (d.bad < 0) continue;
      const double want = space.element(arg.dtype, call.want.buf[k], d.bad), have = space.element(arg.dtype, got[i].buf[k], d.bad);
      wrong(call, k, d.bad, want, have, call.trial,
            "output '" + arg.name + "' differs from the reference at " + jd::multi_index(task, arg, *call.c.shape, d.bad) + where +
                ": expected " + jd::fmt_double(want) + ", got " + jd::fmt_double(have) + ": " + d.why);
      return;
    }
  }
  v.max_abs_error = max_abs;
  v.rel_l2_error = rel_l2;
}

bool CommandBackend::kevo_step(Job& j) {
  Verdict& v = j.v;
  const bool reference_ran = j.phase == 0 || j.mode == "null";
  if (!v.is_correct()) {
    if (reference_ran && v.message.rfind("protocol breach", 0) != 0 && v.status != Status::timeout &&
        v.status != Status::output_limit && v.status != Status::internal_error) {
      // The reference did not run: not the candidate's failure.
      v.message = "the evaluator could not run the reference (" + std::string(to_string(v.status)) + "): " + v.message;
      v.status = Status::internal_error;
    }
    return false;
  }
  std::vector<jd::ArgSet> got;
  if (const std::string why = read_calls(j, got); !why.empty()) {
    ++stats_.breaches;
    v.status = Status::runtime_error;
    v.message = "protocol breach: the " + std::string(reference_ran && j.phase == 0 ? "reference" : "candidate") +
                "'s run: " + why + " (each call's \"out\" file holds the buffer after the call, " +
                "raw and little-endian; docs/command-backend.md#kevo-judged-mode)";
    return false;
  }
  std::error_code ec;
  fs::remove_all(j.io, ec);   // the reference's outputs leave the disk before the candidate runs
  if (j.phase == 0) {
    for (std::size_t i = 0; i < j.calls.size(); ++i) j.calls[i].want = std::move(got[i]);
    if (j.mode == "null" && j.null_kind != "other_seed") {
      kevo_compare(j, null_outputs(j), false);
      if (v.status == Status::correct) v.message = "correct (kevo's null candidate " + j.null_kind + ")";
      return false;
    }
    // On to the candidate's request.
    after_request(j);
    j.earlier_seconds += v.worker_seconds;
    v = run_facts(v);
    v.worker_seconds = 0.0;
    j.phase = 1;
    j.slot = -1;
    j.taken = 0;
    j.resent = false;
    j.state = State::run_queued;
    run_q_.push_front(j.key);
    release_device();
    return true;
  }
  v.worker_seconds += j.earlier_seconds;
  kevo_compare(j, got, j.mode != "null");
  return false;
}

void CommandBackend::start_run(Job& j) {
  j.state = State::running;
  j.v.stage = Stage::correctness;
  const std::string line = dump_json(request_for(j)) + "\n";
  ++stats_.requests;
  j.sent = Clock::now();
  try {
    if (!opt_.run.persistent) {
      j.proc_scratch = sb::ScratchDir::create(scratch_base_, "kevo-cmd-run");
      sb::Spec spec = spec_for(opt_.run.argv, j, j.proc_scratch.path());
      spec.merge_stderr = false;
      spec.input_fd = 0;
      spec.input = line;
      spec.limits.wall_seconds = opt_.run.wall_seconds;
      spec.limits.output_bytes = opt_.output_kb * 1024;
      ++stats_.evaluator_starts;
      by_proc_[runner_.start(std::move(spec))] = j.key;
      return;
    }
    std::size_t free = slots_.size();
    for (std::size_t i = 0; i < slots_.size() && free == slots_.size(); ++i)
      if (slots_[i].job == 0) free = i;
    Slot& s = slots_.at(free);
    if (s.proc == 0) {
      s.scratch = sb::ScratchDir::create(scratch_base_, "kevo-cmd-eval");
      sb::Spec spec = spec_for(opt_.run.argv, j, s.scratch.path());
      spec.merge_stderr = false;
      spec.input_fd = 0;
      spec.keep_input_open = true;
      spec.wake_on_output = true;
      spec.limits.wall_seconds = 0;   // per request: set_deadline
      spec.limits.output_bytes = opt_.output_kb * 1024 * 4;
      ++stats_.evaluator_starts;
      s.proc = runner_.start(std::move(spec));
      s.served = 0;
      s.nonces.clear();
    }
    j.reader->set_stale_nonces(s.nonces);
    s.nonces.insert(j.nonce);
    s.job = j.key;
    j.slot = static_cast<int>(free);
    j.proc = s.proc;
    runner_.set_deadline(s.proc, opt_.run.wall_seconds);
    runner_.send(s.proc, line);
  } catch (const std::exception& e) {
    j.v.status = Status::internal_error;
    j.v.message = std::string("the evaluator could not be started: ") + e.what();
    if (j.slot >= 0) slots_[static_cast<std::size_t>(j.slot)].job = 0;
    finish(j);
  }
}

void CommandBackend::retire(Slot& s) {
  if (s.proc == 0) return;
  retired_.insert(s.proc);
  runner_.close_input(s.proc);
  runner_.kill(s.proc);
  s.proc = 0;
  s.job = 0;
  s.scratch.remove();
}

// The verdict of a request whose answer is complete, or whose process ended
// (f: how it ended, when it did).
void CommandBackend::conclude(Job& j, const sb::Finished* f) {
  const double seconds = std::chrono::duration<double>(Clock::now() - j.sent).count();
  stats_.request_seconds += seconds;
  AnswerReader& r = *j.reader;
  Verdict& v = j.v;
  v.worker_seconds = seconds;
  v.output_tail = tail(j.stderr_text, kOutputTailCap);
  if (f) {
    v.exit_code = f->exit_code;
    v.signal = f->signal;
    v.max_rss_kb = f->max_rss_kb;
  }
  const std::string where = r.last_stage().empty() ? "" : " (its last stage: " + r.last_stage() + ")";
  auto breach = [&](const std::string& why) {
    ++stats_.breaches;
    j.breached = true;
    v.status = Status::runtime_error;
    v.message = "protocol breach: " + why;
  };
  if (f && f->outcome == sb::Outcome::timeout) {
    v.status = Status::timeout;
    v.message = "the evaluator exceeded run.wall_seconds (" + seconds_text(opt_.run.wall_seconds) + ")" + where;
  } else if ((f && f->outcome == sb::Outcome::output_limit) || j.taken > static_cast<std::size_t>(opt_.output_kb) * 1024) {
    v.status = Status::output_limit;
    v.message = "the evaluator printed more than limits.output_kb (" + std::to_string(opt_.output_kb) + " KiB)" + where;
  } else if (!r.breach().empty()) {
    breach(r.breach());
  } else if (r.stale()) {
    breach("late lines of an earlier request came instead of an answer (an evaluator writing after its result)");
  } else if (r.fatal()) {
    j.breached = true;
    v.status = Status::internal_error;
    v.message = "the evaluator failed: " + (r.fatal_message().empty() ? std::string("a fatal event") : r.fatal_message());
  } else if (r.verdict()) {
    if (f && !opt_.run.persistent && (f->outcome != sb::Outcome::exited || f->exit_code != 0)) {
      breach(f->outcome == sb::Outcome::exited ? "the evaluator exited with " + std::to_string(f->exit_code) + " after its result"
                                               : "the evaluator was killed by " + sb::signal_name(f->signal) + " after its result");
    } else {
      if (!r.isolation().is_null()) isolation_ = r.isolation();
      const Verdict& e = *r.verdict();
      const double cs = v.compile_seconds;
      const bool cc = v.compile_cached;
      const std::string log = v.compile_log;
      const double ws = v.worker_seconds;
      const std::string out = v.output_tail;
      v = e;
      v.compile_seconds = cs;
      v.compile_cached = cc;
      if (v.compile_log.empty()) v.compile_log = log;
      else v.compile_log = head(v.compile_log, kCompileLogCap);
      v.worker_seconds = ws;
      v.output_tail = out;
      if (f) {
        v.exit_code = f->exit_code;
        v.max_rss_kb = f->max_rss_kb;
      }
    }
  } else {
    std::string how = !f ? "its process ended" : f->outcome == sb::Outcome::exited ? "it exited with " + std::to_string(f->exit_code)
                                                : f->outcome == sb::Outcome::killed ? "it was killed"
                                                                                    : "it was killed by " + sb::signal_name(f->signal);
    breach("no result: " + how + " before answering" + where);
  }
  if (opt_.kevo_judges && kevo_step(j)) return;   // the candidate's request comes next
  finish(j);   // the feedback shows the last stderr of a failure (output_tail)
}

void CommandBackend::on_run_finished(Job& j, sb::Finished& f) {
  j.stderr_text += f.error_output;
  if (j.slot < 0) j.taken += f.output.size();
  j.reader->feed(f.output);
  j.reader->end();
  j.proc_scratch.remove();
  conclude(j, &f);
}

void CommandBackend::on_persistent_output(Job& j) {
  Slot& s = slots_.at(static_cast<std::size_t>(j.slot));
  const std::string out = runner_.take_output(s.proc);
  j.stderr_text += runner_.take_error_output(s.proc);
  if (j.stderr_text.size() > 4 * kOutputTailCap) j.stderr_text.erase(0, j.stderr_text.size() - 4 * kOutputTailCap);
  j.taken += out.size();
  j.reader->feed(out);
  const bool over = j.taken > static_cast<std::size_t>(opt_.output_kb) * 1024;
  if (!j.reader->complete() && !over) return;
  if (j.reader->stale() && !j.resent) {
    // Late lines of the previous request: that process is not to be
    // trusted, and this candidate was not judged yet. A fresh one judges it.
    ++stats_.breaches;
    retire(s);
    j.resent = true;
    j.slot = -1;
    j.taken = 0;
    j.stderr_text.clear();
    j.state = State::run_queued;
    run_q_.push_front(j.key);
    return;
  }
  runner_.set_deadline(s.proc, 0);
  ++s.served;
  s.job = 0;
  conclude(j, nullptr);
}

bool CommandBackend::take_device() {
  if (lock_fd_ < 0 || locked_) return true;
  while (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    return false;
  }
  locked_ = true;
  return true;
}

void CommandBackend::release_device() {
  if (!locked_) return;
  for (const auto& [k, j] : jobs_)
    if (j.state == State::running) return;
  ::flock(lock_fd_, LOCK_UN);
  locked_ = false;
}

void CommandBackend::after_request(Job& j) {
  if (j.slot < 0) return;
  Slot& s = slots_.at(static_cast<std::size_t>(j.slot));
  if (s.job == j.key) s.job = 0;
  // A process that gave anything but a clean correct verdict, or served
  // its share, is not trusted with the next request; with restart_on
  // "breach", only one that broke the protocol, failed, ran out of time or
  // printed too much (its candidates ran elsewhere).
  using Restart = RunStage::Restart;
  const bool failed = opt_.run.restart_on == Restart::breach
                          ? j.breached || j.v.status == Status::timeout || j.v.status == Status::output_limit ||
                                j.v.status == Status::internal_error
                          : j.v.status != Status::correct;
  // A candidate of a task with hidden shapes ran there (restart_on
  // "hidden"): its process state is not the next candidate's to read.
  const bool ran_hidden = opt_.run.restart_on == Restart::hidden && j.mode == "judge" && !j.task->hidden.empty();
  if (s.proc != 0 && (failed || ran_hidden || s.served >= opt_.run.max_requests)) retire(s);
}

void CommandBackend::finish(Job& j) {
  j.state = State::done;
  after_request(j);
  if (j.v.status == Status::pending) {
    j.v.status = Status::internal_error;
    j.v.message = "no verdict was reached";
  }
  j.v.message = clean_text(j.v.message);
  if (!j.v.profile.empty() && !j.profile_reason.empty()) j.v.profile = "[profiled: " + j.profile_reason + "]\n" + j.v.profile;
  // The hidden shape to withhold: one a mismatch names (kevo's comparison
  // or the evaluator's), the evaluator's failed_shape, else the first
  // hidden shape the candidate ran at (its call event).
  HiddenRun run{j.hidden_label, j.reader ? j.reader->after_hidden() : ""};
  if (run.at.empty() && j.reader) run.at = j.reader->hidden_label();
  const std::string& hidden = run.at.empty() ? run.after : run.at;
  auto redact = [&](std::string s) {
    if (hidden.empty()) return s;
    s = replace_all(std::move(s), hidden, "a hidden test shape");
    const std::string bare = hidden.substr(7);   // "hidden " + label
    return bare.empty() ? s : replace_all(std::move(s), bare, "a hidden test shape");
  };
  j.v.message = redact(j.v.message);
  // (A `forbidden` verdict after a hidden shape keeps the judge's finding
  // and loses the candidate's output: verdict_feedback.)
  std::string fb = verdict_feedback(j.v, *j.task, run);
  // The evaluator's own words, unless the failure was at a hidden shape
  // (they may quote what the candidate wrote there).
  if (hidden.empty() && !j.v.feedback.empty() && j.v.feedback != fb) fb += "\n" + j.v.feedback;
  j.v.feedback = clean_text(redact(fb));
  if (!j.internal) {
    ready_.push_back(EvalResult{j.request_id, std::move(j.v)});
    jobs_.erase(j.key);
  } else {
    internal_done_ = true;   // prepare()'s drive() looks at once
  }
  release_device();
}

void CommandBackend::handle(sb::Finished& f) {
  if (retired_.erase(f.id)) return;
  for (auto& s : slots_) {
    if (s.proc != f.id) continue;
    s.proc = 0;
    s.scratch.remove();
    const std::uint64_t jk = s.job;
    s.job = 0;
    if (jk == 0) return;   // it ended between requests
    Job& j = jobs_.at(jk);
    if (!j.resent && !j.reader->saw_any() && f.outcome == sb::Outcome::exited) {
      // It ended before it could have read this request (it exited after
      // its last answer, as evaluators may): a fresh process takes it.
      j.resent = true;
      j.slot = -1;
      j.state = State::run_queued;
      run_q_.push_front(j.key);
      return;
    }
    on_run_finished(j, f);
    return;
  }
  auto it = by_proc_.find(f.id);
  if (it == by_proc_.end()) return;
  const std::uint64_t key = it->second;
  by_proc_.erase(it);
  auto jt = jobs_.find(key);
  if (jt == jobs_.end()) return;
  Job& j = jt->second;
  if (j.state == State::compiling) {
    --compiling_;
    on_compile_done(j, f);
  } else {
    on_run_finished(j, f);
  }
}

std::vector<EvalResult> CommandBackend::do_poll(std::chrono::milliseconds max_wait) {
  const auto until = Clock::now() + max_wait;
  for (;;) {
    schedule();
    if (!ready_.empty() || std::exchange(internal_done_, false)) break;
    const auto now = Clock::now();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
    if (runner_.running() == 0) {
      if (run_q_.empty() && compile_q_.empty()) break;   // nothing to wait for (prepare() drives its own jobs)
      // Waiting for the device's lock: look again soon.
      if (left.count() > 0) std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(5)));
    } else {
      for (auto& f : runner_.poll(std::max(left, std::chrono::milliseconds(0)))) handle(f);
    }
    for (auto& s : slots_)
      if (s.job != 0) {
        auto it = jobs_.find(s.job);
        if (it != jobs_.end() && it->second.state == State::running) on_persistent_output(it->second);
      }
    schedule();
    if (!ready_.empty() || std::exchange(internal_done_, false) || Clock::now() >= until) break;
  }
  std::vector<EvalResult> out;
  out.swap(ready_);
  return out;
}

void CommandBackend::drive(const std::vector<std::uint64_t>& keys) {
  for (;;) {
    bool all = true;
    for (auto k : keys) all = all && jobs_.at(k).state == State::done;
    if (all) return;
    (void)do_poll(std::chrono::milliseconds(200));
  }
}

void CommandBackend::do_submit(EvalRequest request) {
  if (!prepared_.count(request.task->manifest_path.string()))
    throw Failure("command backend: task '" + request.task->name + "' was not prepared");
  Job j;
  j.request_id = request.id;
  j.task = std::move(request.task);
  j.source = std::move(request.source);
  j.seed = request.seed;
  // Profiles: every n-th candidate (the policy), or one an operator asked
  // for (the analyst, for a lineage without profiles).
  const int every = opt_.profile_every;
  const bool picked = every > 0 && ++profiles_counted_ % static_cast<std::uint64_t>(every) == 0;
  const bool asked = opt_.profile_on_request && !request.profile.empty();
  j.profile = picked || asked;
  j.profile_reason = profile_reason(picked, every, asked, request.profile);
  add(std::move(j));
}

void CommandBackend::do_cancel_all() {
  runner_.kill_all();
  for (auto& s : slots_) {
    s.proc = 0;
    s.job = 0;
    s.scratch.remove();
  }
  retired_.clear();
  by_proc_.clear();
  compile_waiters_.clear();
  compile_q_.clear();
  run_q_.clear();
  compiling_ = 0;
  if (locked_) {
    ::flock(lock_fd_, LOCK_UN);
    locked_ = false;
  }
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->second.state == State::compiling && !it->second.build_dir.empty() && opt_.compile && opt_.compile->cache) {
      std::error_code ec;
      if (it->second.build_dir.filename().string().find(".tmp-") != std::string::npos) fs::remove_all(it->second.build_dir, ec);
    }
    it = jobs_.erase(it);
  }
  ready_.clear();
}

void CommandBackend::do_prepare(const Task& task) {
  auto shared = std::make_shared<const Task>(task);
  const std::string manifest = task.manifest_path.string();
  const std::string run_key = opt_.bundled ? opt_.pointer : opt_.pointer + "/run";
  std::vector<std::uint64_t> keys;
  struct Guard {
    CommandBackend& b;
    std::vector<std::uint64_t>& keys;
    ~Guard() {
      for (auto k : keys) {
        auto it = b.jobs_.find(k);
        if (it == b.jobs_.end()) continue;
        if (it->second.state == State::running || it->second.state == State::compiling) b.do_cancel_all();
        b.jobs_.erase(k);
      }
    }
  } guard{*this, keys};

  // 1. The reference's build (the seed's comes with its judgement below).
  fs::path ref_source = task.reference_path, ref_build;
  if (opt_.compile) {
    Job r;
    r.internal = true;
    r.is_reference = true;
    r.task = shared;
    r.source = task.reference_source;
    const auto k = add(std::move(r));
    keys.push_back(k);
    // Built only: it leaves the pipeline after the compile stage.
    while (jobs_.at(k).state == State::compile_queued || jobs_.at(k).state == State::compiling ||
           jobs_.at(k).state == State::compile_waiting) {
      schedule();
      for (auto& f : runner_.poll(std::chrono::milliseconds(200))) handle(f);
    }
    Job& rj = jobs_.at(k);
    if (rj.v.status != Status::pending)
      throw InputError(manifest, "/reference",
                       "a reference the compile command builds: " + rj.v.message + "\n" + first_lines(rj.v.compile_log, 20, 2000));
    ref_source = rj.source_path;
    ref_build = rj.build_dir;
  }
  prepared_[manifest] = {ref_source, ref_build};
  if (!prepare_checks()) return;

  // 2. The evaluator's conformance: every request at once.
  struct Check {
    std::string what;
    std::uint64_t key;
  };
  std::vector<Check> checks;
  const std::uint64_t seed = 0x6b65766f70726570ULL ^ fnv1a64(task.name);
  auto submit = [&](std::string what, std::string mode, std::string null_kind, std::string source) {
    Job j;
    j.internal = true;
    j.task = shared;
    j.mode = std::move(mode);
    j.null_kind = std::move(null_kind);
    j.source = std::move(source);
    j.seed = seed;
    j.timing = false;
    const auto k = add(std::move(j));
    keys.push_back(k);
    checks.push_back({std::move(what), k});
  };
  submit("self_check", "self_check", "", "");
  for (const char* n : {"zeros", "copy", "other_seed"}) submit(std::string("null ") + n, "null", n, "");
  submit("probe", "judge", "",
         "kevo conformance probe " + random_hex(12) + ": this text is not a program in any language.\n");
  submit("seed", "judge", "", task.seed_source);
  try {
    drive(keys);
  } catch (...) {
    prepared_.erase(manifest);
    throw;
  }
  auto verdict_text = [](const Verdict& v) { return std::string(to_string(v.status)) + ": " + head(v.message, 600); };
  for (const auto& c : checks) {
    const Verdict& v = jobs_.at(c.key).v;
    const bool ok = c.what == "self_check" || c.what == "seed" ? v.is_correct() : !v.is_correct();
    if (ok) continue;
    prepared_.erase(manifest);
    const bool judge_failed = v.status == Status::internal_error || v.message.rfind("protocol breach", 0) == 0 ||
                              v.status == Status::timeout || v.status == Status::output_limit;
    if (judge_failed && opt_.bundled)
      // kevo's own judge (the torch backend): there is no evaluator of the
      // user's to blame. The judge's message says whether the reference
      // failed to load or run, or where the judge itself stopped
      // (docs/torch.md#gpu-status).
      throw InputError(manifest, "/reference",
                       "a reference the " + opt_.backend_name + " backend's judge can load and run on this machine; its " +
                           c.what + " request ended " + verdict_text(v) +
                           (v.output_tail.empty() ? "" : "\nits stderr: " + tail(v.output_tail, 600)));
    if (judge_failed)
      throw InputError(opt_.config_file, run_key,
                       "an evaluator that answers kevo's protocol (docs/command-backend.md); on task '" + task.name +
                           "' its " + c.what + " request ended " + verdict_text(v) +
                           (v.output_tail.empty() ? "" : "\nits stderr: " + tail(v.output_tail, 600)));
    if (c.what == "seed")
      throw InputError(manifest, "/seed", "a seed the evaluator judges correct; it said " + verdict_text(v));
    if (opt_.bundled) {
      // kevo's own evaluator: what fails is the task.
      if (c.what == "self_check")
        throw InputError(manifest, "/reference",
                         "a reference that matches itself on fresh inputs (the " + opt_.backend_name + " judge ran it as a "
                         "candidate and said " + verdict_text(v) + "; is it deterministic within the task's tolerance?)");
      if (c.what != "probe")
        throw InputError(manifest, "/reference",
                         "a reference whose outputs no null candidate matches; the " + c.what + " candidate (" +
                             (c.what == "null zeros" ? "every output 0"
                              : c.what == "null copy" ? "the first input copied into every output"
                                                      : "the outputs of other inputs") +
                             ") is judged correct: a degenerate problem, which kevo refuses (docs/torch.md#degenerate-tasks)");
    }
    if (c.what == "self_check")
      throw InputError(opt_.config_file, run_key,
                       "an evaluator that judges task '" + task.name + "''s reference correct against itself (self_check); it said " +
                           verdict_text(v) + " (or the reference is not deterministic within the tolerance)");
    if (c.what == "probe")
      throw InputError(opt_.config_file, run_key,
                       "an evaluator that fails a candidate which is no program at all; it judged kevo's probe on task '" +
                           task.name + "' correct: it does not build or compare what it is given");
    throw InputError(opt_.config_file, run_key,
                     "an evaluator that judges the " + c.what + " candidate of task '" + task.name +
                         "' not correct; it said correct: either the task's tolerance (" + manifest +
                         " /tolerance) cannot tell a kernel from nothing or the evaluator " +
                         (opt_.kevo_judges ? "does not run the reference on the inputs it is given"
                                           : "does not compare outputs"));
  }
}

std::unique_ptr<Backend> make_command_backend(CommandOptions options) {
  return std::make_unique<CommandBackend>(std::move(options));
}

CommandStats command_stats(const Backend& backend) {
  const auto* c = dynamic_cast<const CommandBackend*>(&backend);
  if (!c) throw Failure("command_stats: '" + backend.name() + "' is not a command backend");
  return c->stats();
}

}  // namespace kevo::command
