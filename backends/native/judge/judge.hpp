// The judging protocol: correctness trials on fresh seeded inputs for every
// visible, hidden and drawn shape (and stress trials), then timing of
// correct candidates against the reference with fresh inputs, re-poisoned
// outputs and a checked output for every timed call. The judge holds the
// inputs, the reference's outputs, the comparison and the clock; the
// candidate and the reference run in their own kernel hosts (endpoint.hpp).
// Documented in docs/verdicts.md.
#pragma once

#include "endpoint.hpp"
#include "space.hpp"

#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"
#include "kevo/native/protocol.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kevo::native::judge {

struct Options {
  std::string mode = kModeJudge;
  std::uint64_t seed = 0;
  int trials = 3;
  bool timing = true;
  TimingRequest timing_options;
  Roofline roofline;
  HostLimits host;              // for messages about limits the candidate's process met
  // The evaluation's wall-clock limit and start: timing stops early (after
  // at least one repeat) rather than turn a slow correct kernel into a timeout.
  double wall_seconds = 0.0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // Shapes drawn for this judgement from the task's shape space
  // (correctness only, like hidden shapes, but named in feedback).
  std::vector<Shape> drawn;
  // false: the hidden shapes are not run (a re-verification inside a
  // judgement whose own protocol runs them after it).
  bool hidden_shapes = true;
};

// Built-in null candidates (trusted code, run in the judge): "zeros" writes
// zeros to every output, "copy" copies the first input buffer element-wise
// into each output (wrapping), "other_seed" returns the reference's outputs
// for inputs drawn from another seed. Their bulk work runs in `space`.
LocalEndpoint::Kernel null_kernel(const std::string& kind, const Task& task, Endpoint& reference,
                                  std::uint64_t seed, Space& space);

class Judge {
 public:
  Judge(const Task& task, const Options& opt, Endpoint& reference, Endpoint& candidate, Space& space);
  // What runs before every timed call (a cache flush); none by default.
  void set_flush(std::function<void()> flush) { flush_ = std::move(flush); }
  // A flavour's timing (the GPU's) in place of the judge's own, run where
  // the judge's would be: after the passes on the visible shapes, before
  // any hidden shape reaches the candidate. It fills the verdict's
  // timing fields and message and returns true, or settles the verdict (a
  // status other than pending), or returns false when it did not time.
  using Timing = std::function<bool(Verdict&)>;
  void set_timing(Timing timing) { flavour_timing_ = std::move(timing); }
  // Called once, before the first hidden shape: the candidate's endpoint
  // for the hidden shapes (a fresh process, the first one ended), or
  // nullptr to go on with the first; a non-empty `failure` (the fresh
  // process did not start) settles the verdict as a runtime error.
  using HiddenCandidate = std::function<Endpoint*(std::string& failure)>;
  void set_hidden_candidate(HiddenCandidate h) { hidden_candidate_ = std::move(h); }
  // Runs the protocol.
  JudgeResult run();
  // The verdict for a side whose process ended outside a call (`where`
  // says when), by the same rules as a call that died.
  JudgeResult explain_end(const Endpoint& side, const std::string& where);

 private:
  struct Fail {};   // thrown internally once the verdict is settled
  // The trials on the hidden shapes (hidden) or on every other (!hidden).
  void correctness(bool hidden);
  void stress(bool hidden);
  void timing();
  void time_case(const Case& c, double budget, double& log_ratio, int& min_reps);
  CallResult call(Endpoint& side, ArgSet& a, const Case& c, const std::string& trial, bool candidate,
                  bool poison_allocations);
  void check_still_stopped(const Case& c, const std::string& trial);
  void check_inputs(const ArgSet& got, const ArgSet& orig, const Case& c, const std::string& trial);
  void compare_outputs(const ArgSet& want, const ArgSet& got, const Case& c, const std::string& trial,
                       bool against_reference);
  void trial_on(const Case& c, const std::string& trial, const std::string& tag, bool repeat,
                const DistributionOverride& dist);
  [[noreturn]] void settle(Status s, const std::string& message);
  [[noreturn]] void settle_failed_call(const CallResult& r, const Endpoint& side, bool candidate,
                                       const std::string& where);

  const Task& task_;
  Space& space_;
  Options opt_;
  Endpoint& ref_;
  Endpoint* cand_;   // the candidate's endpoint (another one for the hidden shapes: set_hidden_candidate)
  std::function<void()> flush_;
  Timing flavour_timing_;
  HiddenCandidate hidden_candidate_;
  std::vector<Case> cases_;
  Verdict v_;
  bool mismatch_hidden_ = false;
  nlohmann::json shape_timings_ = nlohmann::json::array();
  std::vector<std::string> notes_;
};

// The first output element of `got` that misses the task's tolerance
// against `want` (atol + rtol*|want|, or non-finite where want is finite),
// as "Y[3, 17]: expected 1.5, got nan"; empty when every element matches.
std::string first_mismatch(const Task& task, const Case& c, const ArgSet& want, const ArgSet& got, Space& space);

// Why a timing's samples are not to be reported as one median: "" when
// they are stable, else e.g. "IQR 34% of the median" or "two groups".
std::string unstable_timing(const std::vector<double>& samples, double max_iqr_fraction);

// The roofline floor of one shape in nanoseconds (0 when the task has no
// counts or the peaks are unknown).
double roofline_floor_ns(const Task& task, const Shape& s, const Roofline& r);

}  // namespace kevo::native::judge
