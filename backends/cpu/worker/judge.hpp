// The judging protocol of the evaluation worker: correctness trials on fresh
// seeded inputs for every visible and hidden shape, then timing of correct
// candidates against the reference. Documented in docs/verdicts.md.
#pragma once

#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"

#include <nlohmann/json.hpp>

#include <cfenv>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kevo::cpu::worker {

using Entry = void (*)(void* const*);

// Writes one result line (adds the nonce). Defined in main.cpp.
void emit(nlohmann::json j);

struct Options {
  std::string mode;          // judge | self_check | null
  std::string null_kind;     // zeros | copy | other_seed (mode null)
  std::uint64_t seed = 0;
  int trials = 3;
  bool timing = true;
  int warmup = 1;
  int min_repeats = 5;
  int max_repeats = 100;
  double budget_seconds = 0.25;
  std::int64_t flush_bytes = std::int64_t{64} << 20;
  // The process's wall-clock limit and start: timing stops early (after at
  // least one repeat) rather than turn a slow correct kernel into a timeout.
  double wall_seconds = 0.0;
  int threads = 1;           // see set_protocol_threads
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// An aligned heap buffer (64 bytes). Move-only.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t bytes);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer clone() const;
  void* data() const { return p_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

union Scalar {
  std::int32_t i32;
  std::int64_t i64;
  float f32;
  double f64;
};

// The arguments of one call: buffers (empty for scalars), scalar values and
// the pointer array handed to the entry adapter.
struct ArgSet {
  std::vector<Buffer> buf;
  std::vector<Scalar> sc;
  std::vector<void*> ptr;
  std::vector<std::int64_t> n;   // elements per buffer
  void rebind();
};

struct Case {
  const Shape* shape = nullptr;
  bool hidden = false;
  std::size_t index = 0;   // within visible or hidden
  std::string label() const;
};

// Anything that can be judged: a loaded candidate or a built-in null one.
using Kernel = std::function<void(ArgSet&, const Case&)>;
// The trusted reference, called on host arguments (the CUDA worker's runs it
// on the device between an upload and a download).
using Reference = std::function<void(ArgSet&)>;

// Built-in null candidates (trusted code): "zeros" writes zeros to every
// output, "copy" copies the first input buffer element-wise into each
// output (wrapping), "other_seed" returns the reference's outputs for
// inputs drawn from another seed.
Kernel null_kernel(const std::string& kind, const Task& task, Reference reference, std::uint64_t seed);

class Judge {
 public:
  Judge(const Task& task, const Options& opt, Reference reference, Kernel candidate,
        const std::fenv_t& reference_env, const std::fenv_t& candidate_env);
  // Runs the protocol and returns the "result" event.
  nlohmann::json run();

 private:
  struct Fail {};   // thrown internally once the verdict is settled
  void correctness();
  void timing();
  void call_candidate(ArgSet& a, const Case& c, const std::string& trial);
  void call_reference(ArgSet& a);
  void compare_outputs(const ArgSet& want, const ArgSet& got, const Case& c, const std::string& trial,
                       bool against_reference);
  [[noreturn]] void settle(Status s, const std::string& message);

  const Task& task_;
  Options opt_;
  Reference ref_;
  Kernel cand_;
  std::fenv_t ref_env_, cand_env_;
  std::vector<Case> cases_;
  Verdict v_;
  bool mismatch_hidden_ = false;
  nlohmann::json shape_timings_ = nlohmann::json::array();
};

// The first output element of `got` that misses the task's tolerance
// against `want` (atol + rtol*|want|, or non-finite where want is finite),
// as "Y[3, 17]: expected 1.5, got nan"; empty when every element matches.
// For checks outside the trials (the CUDA worker's last timed call).
std::string first_mismatch(const Task& task, const Case& c, const ArgSet& want, const ArgSet& got);

// Threads the protocol's own bulk work (input generation, copies, input
// checks, comparisons) may use; 1 by default. The candidate's code is not
// affected. Results do not depend on the number: inputs are drawn per fixed
// block of elements and sums are combined in block order.
void set_protocol_threads(int n);

// Runs fn(begin, end) over [0, n) in blocks of `block` elements, on up to
// set_protocol_threads' number of threads (the calling thread included).
void for_blocks(std::int64_t n, std::int64_t block, const std::function<void(std::int64_t, std::int64_t)>& fn);

// The q-quantile of v (linear interpolation), 0 for an empty v.
double quantile(std::vector<double> v, double q);

// Inputs of one call: deterministic in (seed, tag, shape, arg). Outputs are
// poisoned (NaN, integer sentinel).
ArgSet make_inputs(const Task& task, const Case& c, std::uint64_t seed, const std::string& tag);
ArgSet clone_for_call(const Task& task, const ArgSet& orig, bool poison_outputs);
// The same buffers and scalars as `orig`, buffer contents uninitialised (to
// be overwritten whole, e.g. by a download from the device).
ArgSet allocate_like(const ArgSet& orig);

}  // namespace kevo::cpu::worker
