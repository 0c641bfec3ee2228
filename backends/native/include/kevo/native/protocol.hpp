// What a native backend (engine side) and its judge process agree on: the
// typed request and result, each spelled once here with one to_json and one
// from_json. Documented in docs/verdicts.md ("The judge protocol").
//
// The backend starts one judge per evaluation:
//   <worker> --request-fd 3 --result-fd 4
// fd 3 carries one JSON request (JudgeRequest, with the per-evaluation nonce)
// and then EOF; the judge reads it, closes fd 3 and keeps the result pipe.
// Every line the judge writes on the result pipe is a JSON object carrying
// the nonce: events ("stage", "call", "fatal") and one "result". The judge
// runs no candidate code: candidates run in kernel host processes it starts
// (docs/sandbox.md), which never see this channel.
#pragma once

#include "kevo/core/verdict.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kevo::native {

inline constexpr int kRequestFd = 3;
inline constexpr int kResultFd = 4;

// Every compiled source (reference, seed, candidate) gets an adapter appended
// that calls the task's function with the declared argument types:
//   extern "C" void kevo_cpu_entry_v1(void* const* args);
// args[k] points at buffer k, or at the value of scalar k.
inline constexpr const char* kEntrySymbol = "kevo_cpu_entry_v1";

// Judge modes.
inline constexpr const char* kModeJudge = "judge";            // candidate vs reference (+ timing)
inline constexpr const char* kModeSelfCheck = "self_check";   // reference vs a fresh copy of itself
inline constexpr const char* kModeNull = "null";              // a built-in null candidate vs reference

// Exit code of a judge that failed for its own reasons (bad request, task
// unreadable, seccomp unavailable...): it sends a "fatal" event first.
inline constexpr int kJudgeFatalExit = 3;

struct TimingRequest {
  int warmup = 1;
  int min_repeats = 5;
  int max_repeats = 100;
  double budget_seconds = 0.25;
  std::int64_t flush_bytes = std::int64_t{64} << 20;
  // A timing whose IQR exceeds this share of its median (or that splits in
  // two groups) is timed again once, then flagged.
  double max_iqr_fraction = 0.25;
};

// The limits a kernel host sets on itself before it loads the candidate.
struct HostLimits {
  std::int64_t memory_mb = 0;   // RLIMIT_AS (0: none)
  double cpu_seconds = 0;       // RLIMIT_CPU (0: none)
  std::int64_t file_mb = 0;     // RLIMIT_FSIZE (0: none)
  int open_files = 0;           // RLIMIT_NOFILE once loaded (0: inherit)
};

// The machine's peaks for the roofline floor (0: no floor).
struct Roofline {
  double peak_gflops = 0.0;
  double peak_gflops_bf16 = 0.0;   // bf16 inputs (tensor cores); 0: peak_gflops
  double peak_gbps = 0.0;
  double floor_fraction = 0.9;
};

struct JudgeRequest {
  std::string nonce;
  std::string mode = kModeJudge;
  std::string null_kind;        // zeros | copy | other_seed (mode null)
  std::string task_dir, reference_so, candidate_so;
  std::uint64_t seed = 0;
  int trials = 3;
  bool timing = true;
  TimingRequest timing_options;
  int judge_threads = 1;        // threads of the judge's own bulk work
  double wall_seconds = 0.0;    // the whole evaluation's wall-clock limit
  bool seccomp = true;
  std::string policy = "cpu";   // the hosts' seccomp variant
  bool namespaces = true;       // ask for namespaces for the hosts
  HostLimits host;
  Roofline roofline;
  // Libraries a candidate may call (Task::libraries), for the judge's check
  // of what the candidate's process mapped.
  std::vector<std::string> libraries;
  // Fields only one flavour reads (the CUDA judge's device, slot, tools).
  nlohmann::json flavour = nlohmann::json::object();
};

nlohmann::json to_json(const JudgeRequest&);
// Throws std::invalid_argument naming the field.
JudgeRequest judge_request_from_json(const nlohmann::json&);

struct JudgeResult {
  Verdict verdict;
  bool mismatch_hidden = false;
  nlohmann::json shape_timings = nlohmann::json::array();
  double worker_ns = 0.0;                      // time the judge spent inside main()
  nlohmann::json isolation = nlohmann::json(); // the candidate host's IsolationReport (null: no host)
  bool device_error = false;                   // the backend should check the device's health
  nlohmann::json flavour = nlohmann::json::object();   // flavour statistics (CUDA: phases, slot intervals...)
};

nlohmann::json to_json(const JudgeResult&);
JudgeResult judge_result_from_json(const nlohmann::json&);

}  // namespace kevo::native
