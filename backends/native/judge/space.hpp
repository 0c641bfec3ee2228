// Where the judge's buffers live and where its bulk work runs: the argument
// buffers of one call (ArgSet), the poison that unwritten outputs hold, and
// the Space interface (host memory and threads here; the CUDA judge's device
// space keeps them in GPU memory). Documented in docs/verdicts.md.
#pragma once

#include "kevo/core/task.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kevo::native::judge {

// One argument buffer: an aligned host allocation (64 bytes), or memory
// allocated elsewhere (a kernel host's shared arena, the CUDA judge's device
// memory) with the function that frees it (none for a view). Move-only.
class Buffer {
 public:
  using Release = void (*)(void*);
  Buffer() = default;
  explicit Buffer(std::size_t bytes);
  // Adopts `p` (`bytes` long); `release` frees it and must not throw.
  Buffer(void* p, std::size_t bytes, Release release) : p_(p), bytes_(bytes), release_(release) {}
  // A view of memory someone else owns.
  static Buffer view(void* p, std::size_t bytes);
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

// One shape the protocol judges on.
struct Case {
  enum class Kind { visible, hidden, drawn };
  const Shape* shape = nullptr;
  Kind kind = Kind::visible;
  std::size_t index = 0;   // within its kind
  bool hidden() const { return kind == Kind::hidden; }
  bool timed() const { return kind == Kind::visible; }
  std::string label() const;
};

// The values unwritten outputs hold: NaNs with a payload for floating
// types, sentinels for integers. Drawn per judgement (Poison::draw), so a
// candidate cannot test for a documented constant.
struct Poison {
  std::uint32_t f32 = 0x7FC0DEADu;
  std::uint64_t f64 = 0x7FF8DEADDEADDEADull;
  std::int32_t i32 = 0x7E5A5A5A;
  std::int64_t i64 = 0x7E5A5A5A5A5A5A5ALL;
  // bf16 has a 7-bit payload: a quiet NaN that neither bf16_from_double
  // (0x7FC0) nor CUDA's conversions (0x7FFF) produce, so that a NaN a
  // kernel computed is not reported as an unwritten element.
  std::uint16_t bf16 = 0x7FDEu;
  // Fresh payloads from `entropy` (quiet NaNs never equal to the canonical
  // ones; integer sentinels never 0 or -1).
  static Poison draw(std::uint64_t entropy);
};

// The key of a judgement's input streams (SipHash-2-4 over the seed and the
// stream): each stream's generator starts from stream(seed, id), so inputs
// cannot be told from the seed without the key, and one stream's values say
// nothing of another's. A judge draws a fresh key per judgement (draw): the
// red team of 2026-12-05 recovered the seed of a judgement (kevo eval's
// default 1, or a run's derived from its config seed and the candidate's
// id) from its first inputs in 0.2 s, rebuilt every timed call's inputs and
// served precomputed outputs at 28x. The zero key keeps inputs a function
// of the seed alone (tests).
struct InputKey {
  std::uint64_t k0 = 0, k1 = 0;
  std::uint64_t stream(std::uint64_t seed, std::uint64_t id) const;
  // The seed of a judgement's drawn shapes (draw_shapes), keyed too: with
  // the seed alone a candidate computed them at its first call.
  std::uint64_t draws_seed(std::uint64_t seed) const { return stream(seed, 0x6472617773ULL); }   // "draws"
  static InputKey draw();   // getrandom
};

// The judgement's poison from its input key (one getrandom per judgement:
// the key's). The payloads are SipHash-2-4 of the seed under the key, which
// the candidate sees; a PRF's outputs say nothing of its key, so the
// poison tells nothing of the inputs' streams.
Poison keyed_poison(const InputKey& key, std::uint64_t seed);

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
  // The same sums of the values scaled by kL2Scale first: a float64 output
  // with values above about 1e154 makes diff2 and want2 infinite, and the
  // relative L2 error inf / inf, which nothing fails (diff_output uses
  // these then; the torch judge scales by the largest value instead).
  double diff2_scaled = 0.0, want2_scaled = 0.0;
  std::int64_t compared = 0;   // finite pairs in the sums
  std::int64_t bad = -1, worst = -1;
  Why why = Why::none;
};
constexpr std::int64_t kBlockElements = std::int64_t{1} << 16;
// 2^-600: the square of the largest double scaled by it is about 1.8e127,
// so a sum of them stays finite for any buffer that fits in memory.
constexpr double kL2Scale = 0x1p-600;

// Words for a Why ("" for none).
const char* why_text(Why w);

// The comparison of one output, its blocks combined in order: the largest
// difference, the relative L2 error (its denominator floored at
// atol * sqrt(n), docs/verdicts.md) and the first bad element (-1: none;
// when every element is within atol + rtol*|want| but the L2 error is over
// rel_l2, the worst element), with why it is bad.
struct OutputDiff {
  double max_abs = 0.0, rel_l2 = 0.0;
  std::int64_t bad = -1;
  std::string why;
};
class Space;
OutputDiff diff_output(Space& space, DType t, const Buffer& want, const Buffer& got, std::int64_t n, const Tolerance& tol,
                       bool against_reference);

// Input distributions to use instead of the manifest's (a stress trial).
using DistributionOverride = std::function<const Distribution*(const Arg&)>;

// Where the protocol's buffers live and where its bulk work (input
// generation, poisoning, copies, input checks, comparisons) runs. The
// protocol itself (Judge) is the same for every space. Methods throw
// std::runtime_error when the memory's device fails.
class Space {
 public:
  virtual ~Space() = default;
  // Fresh inputs, deterministic in (input key, seed, tag, shape, argument);
  // outputs poisoned. The values depend on the space's generator.
  virtual ArgSet make_inputs(const Task& task, const Case& c, std::uint64_t seed, const std::string& tag,
                             const DistributionOverride& dist = {}) = 0;
  // The same, into the buffers of `a` (allocated for case c): new input
  // contents, outputs poisoned, no allocation.
  virtual void fill_inputs(const Task& task, const Case& c, ArgSet& a, std::uint64_t seed, const std::string& tag,
                           const DistributionOverride& dist = {}) = 0;
  // A copy of every buffer (outputs poisoned instead when asked).
  virtual ArgSet clone_for_call(const Task& task, const ArgSet& orig, bool poison_outputs) = 0;
  // dst's buffers (allocated, same sizes) take orig's inputs, and poison
  // for `out` buffers (inout ones take their input).
  virtual void load(const Task& task, ArgSet& dst, const ArgSet& orig) = 0;
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

  const Poison& poison() const { return poison_; }
  void set_poison(const Poison& p) { poison_ = p; }
  const InputKey& input_key() const { return input_key_; }
  void set_input_key(const InputKey& k) { input_key_ = k; }

 private:
  Poison poison_;
  InputKey input_key_;
};

// Host memory, bulk work on set_protocol_threads' threads.
Space& host_space();

// The arguments of one call without buffer contents: scalars set from the
// shape, element counts filled, buffers empty (a Space allocates them).
ArgSet scalars_of(const Task& task, const Case& c);
// The random stream of one argument of one call (FNV of tag, case, name).
std::uint64_t input_stream(const Case& c, const std::string& tag, const Arg& arg);
// Bytes of every buffer of case c, each rounded up to `align`.
std::size_t layout_bytes(const Task& task, const Case& c, std::size_t align);
// The size of a judgement's argument arena, which the candidate's process
// can read from its start (/proc/self/maps; the CUDA host's command line),
// before any call at a hidden shape (docs/verdicts.md, "the size of a
// native judge's arena"). It depends on the visible shapes and the draw
// space's caps only, never on the hidden shapes or this judgement's draws:
// the largest visible layout, or, in a task with a draw space, the larger
// of it and the most any drawn shape's buffers can take
// (draw_layout_bound). A hidden shape larger than that needs an arena of
// `hidden_bytes`, and `reveals` names the largest such shape: its size
// would tell of it from the process's start, so the hidden shapes then run
// in a second process of the candidate's, started after the first one's
// timing (run_session).
struct ArenaSize {
  std::size_t bytes = 0;          // the arena of the candidate's (first) process
  std::size_t hidden_bytes = 0;   // room for every shape, hidden ones included (>= bytes)
  const Shape* reveals = nullptr; // the largest hidden shape beyond `bytes`, if any
};
ArenaSize arena_size(const Task& task, const std::vector<Shape>& drawn, std::size_t align);
// The most bytes a drawn shape's buffers can take, each rounded up to
// `align` (the draw space's max_elements and max_bytes); 0 without a draw
// space.
std::size_t draw_layout_bound(const Task& task, std::size_t align);
// The same buffers and scalars as `orig`, buffer contents uninitialised.
ArgSet allocate_like(const ArgSet& orig);

// Threads the judge's own bulk work (input generation, copies, input
// checks, comparisons) may use; 1 by default. Results do not depend on the
// number: inputs are drawn per fixed block of elements and sums are
// combined in block order.
void set_protocol_threads(int n);
// Runs fn(begin, end) over [0, n) in blocks of `block` elements, on up to
// set_protocol_threads' number of threads (the calling thread included).
void for_blocks(std::int64_t n, std::int64_t block, const std::function<void(std::int64_t, std::int64_t)>& fn);

// The q-quantile of v (linear interpolation), 0 for an empty v.
double quantile(std::vector<double> v, double q);
// "1.5" style, 9 significant digits.
std::string fmt_double(double v);
// "[3, 17]": the multi-index of flat element `flat` of argument a.
std::string multi_index(const Task& task, const Arg& a, const Shape& s, std::int64_t flat);

}  // namespace kevo::native::judge
