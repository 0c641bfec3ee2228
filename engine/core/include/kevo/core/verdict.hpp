// The judgement of one candidate. Documented in docs/verdicts.md.
// A verdict is data: every status is an expected outcome, never an exception.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kevo {

enum class Status : std::uint8_t {
  pending = 0,       // not judged yet (never written as final)
  correct = 1,
  wrong_answer = 2,
  compile_error = 3,
  runtime_error = 4,  // signal, non-zero exit, sandbox violation, protocol breach
  timeout = 5,        // wall clock or CPU time limit
  memory_limit = 6,
  output_limit = 7,   // printed more than the byte cap
  duplicate = 8,      // same normalised source as an earlier candidate: not re-judged
  invalid = 9,        // the operator failed to make a candidate (no source)
  lost = 10,          // in flight when the run was killed; recorded on resume
  internal_error = 11,// kevo's own failure while judging (worker missing...)
  forbidden = 12      // the candidate uses what the task does not allow (a library symbol it may
                      // not call, a numerics setting it may not change); the message names it
};
inline constexpr int kStatusCount = 13;

enum class Stage : std::uint8_t { none = 0, compile = 1, correctness = 2, timing = 3, done = 4 };

std::string_view to_string(Status);
std::string_view to_string(Stage);
std::optional<Status> status_from_string(std::string_view);
std::optional<Stage> stage_from_string(std::string_view);

// Where a wrong answer first differs.
struct Mismatch {
  std::string arg;        // output argument name
  std::string shape;      // shape label, e.g. "M=129,N=77,K=65"
  std::string trial;      // "trial 2" / "repeat-consistency" / "input-modified"
  std::int64_t flat_index = -1;
  std::string index;      // "[3, 17]"
  double expected = 0.0;
  double got = 0.0;
};

struct Verdict {
  Status status = Status::pending;
  Stage stage = Stage::none;       // the last stage entered
  std::string message;             // one line, for people and prompts

  // compile
  double compile_seconds = 0.0;
  bool compile_cached = false;
  std::string compile_log;         // capped

  // correctness
  double max_abs_error = 0.0;
  double rel_l2_error = 0.0;
  std::optional<Mismatch> mismatch;

  // timing (nanoseconds); speedup = ref_median / cand_median
  double cand_median_ns = 0.0, cand_iqr_ns = 0.0;
  double ref_median_ns = 0.0, ref_iqr_ns = 0.0;
  std::int32_t repeats = 0;
  double speedup = 0.0;

  // the worker process
  double worker_seconds = 0.0;     // wall time of the evaluation subprocess
  double slot_seconds = 0.0;       // time it held the accelerator's exclusive timing slot
  std::int32_t exit_code = 0;
  std::int32_t signal = 0;
  std::int64_t max_rss_kb = 0;
  std::string output_tail;         // candidate stdout/stderr, capped

  // A compact text for the next mutation (compiler errors, mismatch, timings).
  std::string feedback;

  // Profiler summary of a correct candidate, where the backend made one (CUDA:
  // ncu throughput, occupancy, stalls, registers); offered to prompts.
  std::string profile;
  // The accelerator that judged and timed it ("" for the CPU backend), e.g.
  // "NVIDIA H200 0000:19:00.0 GPU-8f..." so a run can show where each timing ran.
  std::string device;

  bool is_correct() const { return status == Status::correct; }
};

nlohmann::json to_json(const Verdict&);
// Makes every text of the verdict (message, compile_log, output_tail,
// feedback, profile, device, the mismatch's names) safe for JSON, HDF5 and
// terminals: sanitize_utf8 with kShownText (kevo/core/text.hpp). The Backend
// wrapper applies it to every verdict a backend returns.
void sanitize_texts(Verdict&);
Verdict verdict_from_json(const nlohmann::json&);   // throws std::exception on bad input

}  // namespace kevo
