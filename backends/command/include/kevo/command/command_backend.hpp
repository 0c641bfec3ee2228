// The command backend: candidates built and judged by a user's evaluator
// program, spoken to through kevo's command protocol (docs/command-backend.md).
// kevo keeps the task, the seeds, the hidden and drawn shapes, the
// evaluator's conformance check and the checks of every verdict; the
// evaluator builds, runs, compares and times on a device kevo cannot host.
#pragma once

#include "kevo/core/backend.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kevo::command {

inline constexpr int kProtocolVersion = 1;

struct CompileStage {
  std::vector<std::string> argv;
  std::vector<std::string> version_argv;   // empty: none
  double wall_seconds = 60.0;
  int jobs = 0;                            // 0: cores
  bool cache = true;
};

struct RunStage {
  std::vector<std::string> argv;
  double wall_seconds = 60.0;
  int jobs = 1;
  bool accelerator = false;
  bool persistent = false;
  int max_requests = 100;
  // persistent: which requests retire the process ("restart_on").
  //   failure: every verdict but correct.
  //   hidden (the default): those, and every request that ran a candidate
  //     on a task with hidden shapes. The candidate's code ran in the
  //     evaluator's process there, and what it left (PoCL's CPU device
  //     keeps each worker thread's __local memory from launch to launch)
  //     could carry the hidden sizes into the next candidate's feedback
  //     before that one's first hidden call (the red team of 2026-12-05).
  //   breach: only protocol breaches, timeouts, output over the cap and
  //     evaluator failures; for evaluators that never run a candidate's
  //     code in their own process (the torch judge's zygote).
  enum class Restart { failure, hidden, breach };
  Restart restart_on = Restart::hidden;
  // accelerator: the folder of the device locks every kevo process of the
  // host takes around a request ("" = $TMPDIR or /tmp).
  std::string lock_dir;
};

// "confine": the compile and run commands start under Landlock (where the
// kernel has it; a command asked to be confined never runs unconfined):
// they write only beneath their scratch folder, kevo's job and build
// folders and `write`, and read only the system's trees, the files and
// folders their argv names, kevo's job and build folders and `read`. Not
// the user's home, the task folders (hidden shapes) or /proc: a candidate
// that a compiler or evaluator reads (an OpenCL kernel's #include) reaches
// none of them.
struct Confinement {
  bool on = false;
  std::vector<std::string> read, write;   // absolute, besides the defaults
};

struct Timing {
  int warmup = 1;
  int min_repeats = 5;
  int max_repeats = 100;
  double budget_seconds = 0.25;
  double max_iqr_fraction = 0.25;
  // A timing whose median's 95% interval is wider than +-this share of it
  // is unstable (0: not asked; the torch judge's default rule).
  double max_ci_fraction = 0.0;
};

struct CommandOptions {
  std::string source_file = "candidate.src";
  std::optional<CompileStage> compile;
  RunStage run;
  std::map<std::string, std::string> env;
  std::vector<std::string> pass_env;
  std::int64_t output_kb = 64;
  std::int64_t memory_mb = 0;
  double peak_gflops = 0.0, peak_gbps = 0.0, floor_fraction = 0.9;
  std::filesystem::path system_prompt, knowledge;   // empty: not configured
  int trials = 3;
  // "judge": "kevo": kevo draws the inputs, writes them as files and
  // compares the outputs itself; the evaluator only runs the programs on
  // them ("run" requests) and times them. "evaluator" (false): the
  // evaluator judges.
  bool kevo_judges = false;
  Timing timing;
  Confinement confine;
  std::string cache_dir;     // "" = no compile cache
  std::string scratch_dir;   // "" = $TMPDIR or /tmp
  std::filesystem::path config_dir;   // {config_dir}
  std::string config_file, pointer;   // where the options were read (errors name them)
  // A backend built on this one around an evaluator that ships with kevo
  // (the torch backend, docs/torch.md): its name in messages, conformance
  // failures reported as faults of the task (the evaluator is kevo's own),
  // and the sandbox guarantees taken from the isolation reports its answers
  // carry ("isolation" in a result line).
  std::string backend_name = "command";
  bool bundled = false;
  // Profiles ("profile": true in a request): also every n-th timed
  // candidate (0: never), and where an operator asks for one
  // (EvalRequest::profile, the analyst). A verdict's profile is then headed
  // by why it was taken ("[profiled: ...]").
  int profile_every = 0;
  bool profile_on_request = true;
};

// Reads "backend": {"command": {...}} strictly. Commands are looked up now:
// an argv[0] that is neither in PATH nor an executable file is an
// InputError naming the key, so are prompt files that cannot be read and
// pass_env names that look like secrets.
CommandOptions parse_command_options(StrictObject& obj);
nlohmann::json to_json(const CommandOptions&);
const char* to_string(RunStage::Restart);
std::unique_ptr<Backend> make_command_backend(CommandOptions options);

// ---- the protocol (exposed for tests) ------------------------------------

// A shape of one request: its label as the evaluator sees it ("hidden ..."
// for hidden shapes, "drawn ..." for drawn ones) and its kind.
struct RequestShape {
  std::string label;
  std::string kind;   // visible | hidden | drawn
  Shape shape;
};

// The shapes a judgement of `task` with `seed` checks: visible, hidden
// (labelled "hidden <label>"), then the drawn ones.
std::vector<RequestShape> request_shapes(const Task& task, std::uint64_t seed);

struct RequestInfo {
  std::string nonce;
  std::string mode = "judge";   // judge | self_check | null | run
  std::string null_kind;
  // run (backend.command.judge = "kevo"): which program runs the calls
  // (reference | candidate), the files ({in, out}) and the calls: [{shape,
  // trial, time, args: {name: {offset, bytes}}}]
  // (docs/command-backend.md#kevo-judged-mode).
  std::string program;
  nlohmann::json files, calls;
  std::uint64_t seed = 0;
  int trials = 3;
  bool timing = true;
  Timing timing_options;
  double wall_seconds = 60.0;
  std::filesystem::path reference_source, reference_build;   // build "": none
  std::filesystem::path candidate_source, candidate_build;   // source "": none (null mode)
  bool profile = false;
};

nlohmann::json make_request(const Task& task, const std::vector<RequestShape>& shapes, const RequestInfo& info);

// What kevo needs to check an answer to one request.
struct AnswerRules {
  std::string nonce;
  bool timing = true;
  std::vector<std::string> visible;          // labels, in order
  std::set<std::string> hidden, all;         // labels
  std::set<std::string> outputs;             // out/inout argument names (empty: a task without args,
                                             // whose outputs the evaluator names "output <i>")
  std::map<std::string, double> floor_ns;    // visible label -> roofline floor (absent: none)
  double floor_fraction = 0.9;
  // A persistent evaluator's earlier requests: a line with one of their
  // nonces is late output of a request already answered (stale()).
  std::set<std::string> stale_nonces;
};
AnswerRules answer_rules(const Task& task, const std::vector<RequestShape>& shapes, const std::string& nonce,
                         bool timing, const CommandOptions& options);

// Reads an evaluator's stdout line by line (feed as it comes; persistent
// evaluators keep writing).
class AnswerReader {
 public:
  explicit AnswerReader(AnswerRules rules) : rules_(std::move(rules)) {}
  void feed(std::string_view chunk);
  // The evaluator's output ended (it exited): a partial last line counts.
  void end();
  // A result, a fatal event or a breach was read: nothing more is needed.
  bool complete() const { return verdict_.has_value() || fatal_ || !breach_.empty() || stale_; }
  // A line of an earlier request came before any of this one's answer: the
  // process is broken, this request was not answered (ask a fresh one).
  bool stale() const { return stale_; }
  void set_stale_nonces(std::set<std::string> nonces) { rules_.stale_nonces = std::move(nonces); }

  const std::optional<Verdict>& verdict() const { return verdict_; }   // a valid result
  bool fatal() const { return fatal_; }
  const std::string& fatal_message() const { return fatal_message_; }
  const std::string& breach() const { return breach_; }   // "" = none
  const std::string& last_stage() const { return last_stage_; }
  const std::string& hidden_label() const { return hidden_label_; }   // the hidden shape a mismatch names
  // The first hidden shape a "call" event named: the candidate ran there,
  // and whatever it printed or did afterwards may carry the sizes.
  const std::string& after_hidden() const { return after_hidden_; }
  // A bundled evaluator's report of the candidate's isolation (null: none).
  const nlohmann::json& isolation() const { return isolation_; }
  const nlohmann::json& shape_timings() const { return shape_timings_; }
  bool saw_result() const { return saw_result_; }
  bool saw_any() const { return lines_ > 0 || !partial_.empty(); }

 private:
  void line(std::string_view text);
  void result(const nlohmann::json& j);

  AnswerRules rules_;
  std::string partial_;
  int lines_ = 0;
  bool saw_result_ = false;
  bool stale_ = false;
  std::optional<Verdict> verdict_;
  bool fatal_ = false;
  std::string fatal_message_, breach_, last_stage_, hidden_label_, after_hidden_;
  nlohmann::json shape_timings_ = nlohmann::json::array();
  nlohmann::json isolation_;
};

// Counters for tests and the benchmark.
struct CommandStats {
  std::uint64_t compiles = 0, cache_hits = 0;
  std::uint64_t evaluator_starts = 0;   // processes started (one-shot: one per request)
  std::uint64_t requests = 0;           // requests sent
  std::uint64_t breaches = 0;
  double request_seconds = 0.0;         // summed: request written -> answer complete (engine side)
};
CommandStats command_stats(const Backend& backend);   // the backend must be a command backend

}  // namespace kevo::command
