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

// One argument buffer: an aligned host allocation (64 bytes), or memory a
// Space allocated elsewhere (the CUDA worker's device memory) with the
// function that frees it. Move-only.
class Buffer {
 public:
  using Release = void (*)(void*);
  Buffer() = default;
  explicit Buffer(std::size_t bytes);
  // Adopts `p` (`bytes` long); `release` frees it and must not throw.
  Buffer(void* p, std::size_t bytes, Release release) : p_(p), bytes_(bytes), release_(release) {}
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return p_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void reset() noexcept;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
  Release release_ = nullptr;   // null: std::free
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

// Why an element of an output is bad (ComparePart::why).
enum class Why : std::int32_t {
  none,
  reference_unwritten,   // the reference left it poisoned
  expected_nonfinite,    // the reference has inf/NaN there and the candidate not the same
  unwritten,             // still the poison outputs are pre-filled with
  got_nonfinite,         // inf/NaN where the reference is finite
  outside_tolerance,     // |got - want| > atol + rtol*|want|
};

// The comparison of one block of kBlockElements elements of one output:
// partial L2 sums over finite pairs, the largest difference (first index
// on ties) and the first bad element. The judge combines blocks in order,
// so its figures do not depend on how the blocks were computed.
struct ComparePart {
  double diff2 = 0.0, want2 = 0.0, max_abs = 0.0;
  std::int64_t compared = 0;   // finite pairs in the sums
  std::int64_t bad = -1, worst = -1;
  Why why = Why::none;
};
constexpr std::int64_t kBlockElements = std::int64_t{1} << 16;

// Where the protocol's buffers live and where its bulk work (input
// generation, poisoning, copies, input checks, comparisons) runs: host
// memory and threads (host_space(), the CPU worker), or GPU memory and
// kernels (the CUDA worker's device space, so that no buffer crosses PCIe).
// The protocol itself (Judge) is the same for both. Methods throw
// std::runtime_error when the memory's device fails.
class Space {
 public:
  virtual ~Space() = default;
  // Fresh inputs, deterministic in (seed, tag, shape, argument); outputs
  // poisoned. The values depend on the space's generator.
  virtual ArgSet make_inputs(const Task& task, const Case& c, std::uint64_t seed, const std::string& tag) = 0;
  // A copy of every buffer (outputs poisoned instead when asked).
  virtual ArgSet clone_for_call(const Task& task, const ArgSet& orig, bool poison_outputs) = 0;
  // dst = src (same size).
  virtual void copy(Buffer& dst, const Buffer& src) = 0;
  virtual void zero(Buffer& b) = 0;
  // dst[i] = src[i % src_n] converted between dtypes, for i < dst_n.
  virtual void convert(DType dst_t, Buffer& dst, std::int64_t dst_n, DType src_t, const Buffer& src,
                       std::int64_t src_n) = 0;
  // The first byte offset at which a and b differ; a.bytes() when equal.
  virtual std::size_t first_difference(const Buffer& a, const Buffer& b) = 0;
  // One part per kBlockElements block of n elements.
  virtual std::vector<ComparePart> compare(DType t, const Buffer& want, const Buffer& got, std::int64_t n,
                                           const Tolerance& tol, bool against_reference) = 0;
  // Element i as a double.
  virtual double element(DType t, const Buffer& b, std::int64_t i) = 0;
};

// Host memory, bulk work on set_protocol_threads' threads.
Space& host_space();

// The arguments of one call without buffer contents: scalars set from the
// shape, element counts filled, buffers empty (a Space allocates them).
ArgSet scalars_of(const Task& task, const Case& c);
// The random stream of one argument of one call (FNV of tag, case, name).
std::uint64_t input_stream(const Case& c, const std::string& tag, const Arg& arg);

// Built-in null candidates (trusted code): "zeros" writes zeros to every
// output, "copy" copies the first input buffer element-wise into each
// output (wrapping), "other_seed" returns the reference's outputs for
// inputs drawn from another seed. Their bulk work runs in `space`.
Kernel null_kernel(const std::string& kind, const Task& task, Reference reference, std::uint64_t seed,
                   Space& space = host_space());

class Judge {
 public:
  // The correctness trials keep their buffers in `space`; the host timing
  // (CPU backend) is host-only.
  Judge(const Task& task, const Options& opt, Reference reference, Kernel candidate,
        const std::fenv_t& reference_env, const std::fenv_t& candidate_env, Space& space = host_space());
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
  Space& space_;
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
std::string first_mismatch(const Task& task, const Case& c, const ArgSet& want, const ArgSet& got,
                           Space& space = host_space());

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

// host_space()'s make_inputs and clone_for_call. Outputs are poisoned
// (NaN with a payload, integer sentinels: the poison_* constants).
ArgSet make_inputs(const Task& task, const Case& c, std::uint64_t seed, const std::string& tag);
ArgSet clone_for_call(const Task& task, const ArgSet& orig, bool poison_outputs);

// The poison patterns, shared by every space.
constexpr std::uint32_t kPoisonF32 = 0x7FC0DEADu;
constexpr std::uint64_t kPoisonF64 = 0x7FF8DEADDEADDEADull;
constexpr std::int32_t kPoisonI32 = 0x7E5A5A5A;
constexpr std::int64_t kPoisonI64 = 0x7E5A5A5A5A5A5A5ALL;
// bf16 has a 7-bit payload: a quiet NaN that neither bf16_from_double
// (0x7FC0) nor CUDA's conversions (0x7FFF) produce, so that a NaN a kernel
// computed is not reported as an unwritten element.
constexpr std::uint16_t kPoisonBF16 = 0x7FDEu;
// The same buffers and scalars as `orig`, buffer contents uninitialised (to
// be overwritten whole, e.g. by a download from the device).
ArgSet allocate_like(const ArgSet& orig);

}  // namespace kevo::cpu::worker
