#include "judge.hpp"

#include "alloc_hooks.hpp"

#include "kevo/core/hash.hpp"
#include "kevo/core/rng.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <typeinfo>

namespace kevo::cpu::worker {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kUnwritten =
    "the element still holds the NaN/sentinel outputs are pre-filled with: never written, or "
    "accumulated into without being initialised";

// Elements per block of the parallel bulk work (and per input RNG stream).
constexpr std::int64_t kBlock = kBlockElements;
int g_threads = 1;

// Fills elements [lo, hi) of b with the dtype's poison.
void poison_range(DType t, void* base, std::int64_t lo, std::int64_t hi) {
  switch (t) {
    case DType::f32: {
      auto* p = static_cast<std::uint32_t*>(base);
      std::fill(p + lo, p + hi, kPoisonF32);
      break;
    }
    case DType::f64: {
      auto* p = static_cast<std::uint64_t*>(base);
      std::fill(p + lo, p + hi, kPoisonF64);
      break;
    }
    case DType::i32: {
      auto* p = static_cast<std::int32_t*>(base);
      std::fill(p + lo, p + hi, kPoisonI32);
      break;
    }
    case DType::i64: {
      auto* p = static_cast<std::int64_t*>(base);
      std::fill(p + lo, p + hi, kPoisonI64);
      break;
    }
    case DType::bf16: {
      auto* p = static_cast<std::uint16_t*>(base);
      std::fill(p + lo, p + hi, kPoisonBF16);
      break;
    }
  }
}

void poison(const Arg& a, Buffer& b, std::int64_t n) {
  for_blocks(n, 4 * kBlock, [&](std::int64_t lo, std::int64_t hi) { poison_range(a.dtype, b.data(), lo, hi); });
}

// Lowers `at` to i if i is smaller (the first bad index over parallel blocks).
void lower_to(std::atomic<std::int64_t>& at, std::int64_t i) {
  std::int64_t cur = at.load();
  while (i < cur && !at.compare_exchange_weak(cur, i)) {
  }
}

// memcpy in parallel blocks.
void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  constexpr std::int64_t kChunk = std::int64_t{1} << 20;
  for_blocks(static_cast<std::int64_t>(bytes), kChunk, [&](std::int64_t lo, std::int64_t hi) {
    std::memcpy(static_cast<char*>(dst) + lo, static_cast<const char*>(src) + lo, static_cast<std::size_t>(hi - lo));
  });
}

// The first byte offset at which a and b differ (bytes when equal), in parallel.
std::size_t first_difference(const void* a, const void* b, std::size_t bytes) {
  constexpr std::int64_t kChunk = std::int64_t{1} << 20;
  std::atomic<std::int64_t> first{static_cast<std::int64_t>(bytes)};
  for_blocks(static_cast<std::int64_t>(bytes), kChunk, [&](std::int64_t lo, std::int64_t hi) {
    const auto* pa = static_cast<const unsigned char*>(a);
    const auto* pb = static_cast<const unsigned char*>(b);
    if (lo >= first.load(std::memory_order_relaxed)) return;
    if (std::memcmp(pa + lo, pb + lo, static_cast<std::size_t>(hi - lo)) == 0) return;
    std::int64_t i = lo;
    while (pa[i] == pb[i]) ++i;
    lower_to(first, i);
  });
  return static_cast<std::size_t>(first.load());
}

bool is_poison(DType t, const void* base, std::int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<const std::uint32_t*>(base)[i] == kPoisonF32;
    case DType::f64: return static_cast<const std::uint64_t*>(base)[i] == kPoisonF64;
    case DType::i32: return static_cast<const std::int32_t*>(base)[i] == kPoisonI32;
    case DType::i64: return static_cast<const std::int64_t*>(base)[i] == kPoisonI64;
    case DType::bf16: return static_cast<const std::uint16_t*>(base)[i] == kPoisonBF16;
  }
  return false;
}

double element(DType t, const void* base, std::int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f64: return static_cast<const double*>(base)[i];
    case DType::i32: return static_cast<const std::int32_t*>(base)[i];
    case DType::i64: return static_cast<double>(static_cast<const std::int64_t*>(base)[i]);
    case DType::bf16: return bf16_to_double(static_cast<const std::uint16_t*>(base)[i]);
  }
  return 0.0;
}

void store(DType t, void* base, std::int64_t i, double v) {
  switch (t) {
    case DType::f32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(base)[i] = v; break;
    case DType::i32: static_cast<std::int32_t*>(base)[i] = static_cast<std::int32_t>(v); break;
    case DType::i64: static_cast<std::int64_t*>(base)[i] = static_cast<std::int64_t>(v); break;
    case DType::bf16: static_cast<std::uint16_t*>(base)[i] = bf16_from_double(v); break;
  }
}

std::string multi_index(const Task& task, const Arg& a, const Shape& s, std::int64_t flat) {
  const auto ext = task.extents(a, s);
  std::vector<std::int64_t> idx(ext.size(), 0);
  for (std::size_t k = ext.size(); k-- > 0;) {
    if (ext[k] > 0) {
      idx[k] = flat % ext[k];
      flat /= ext[k];
    }
  }
  std::string out = "[";
  for (std::size_t k = 0; k < idx.size(); ++k) out += (k ? ", " : "") + std::to_string(idx[k]);
  return out + "]";
}

std::string fmt_double(double v) {
  std::ostringstream o;
  o.precision(9);
  o << v;
  return o.str();
}

const char* why_text(Why w) {
  switch (w) {
    case Why::none: break;
    case Why::reference_unwritten: return "the reference left this element unwritten";
    case Why::expected_nonfinite: return "expected a non-finite value";
    case Why::unwritten: return kUnwritten;
    case Why::got_nonfinite: return "got a non-finite value";
    case Why::outside_tolerance: return "outside atol + rtol*|expected|";
  }
  return "";
}

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

}  // namespace

void set_protocol_threads(int n) { g_threads = std::clamp(n, 1, 256); }

void for_blocks(std::int64_t n, std::int64_t block, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n <= 0) return;
  block = std::max<std::int64_t>(block, 1);
  const std::int64_t blocks = (n + block - 1) / block;
  const int workers = static_cast<int>(std::min<std::int64_t>(g_threads, blocks));
  std::atomic<std::int64_t> next{0};
  auto work = [&] {
    for (std::int64_t b; (b = next.fetch_add(1, std::memory_order_relaxed)) < blocks;)
      fn(b * block, std::min(n, (b + 1) * block));
  };
  if (workers <= 1) {
    work();
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(workers - 1));
  for (int t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return v[lo] * (1.0 - frac) + v[hi] * frac;
}

// ---- Buffer ---------------------------------------------------------------

Buffer::Buffer(std::size_t bytes) : bytes_(bytes) {
  const std::size_t rounded = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
  p_ = std::aligned_alloc(64, rounded);
  if (!p_) throw std::bad_alloc();
}
void Buffer::reset() noexcept {
  if (!p_) return;
  if (release_)
    release_(p_);
  else
    std::free(p_);
  p_ = nullptr;
}
Buffer::~Buffer() { reset(); }
Buffer::Buffer(Buffer&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), release_(o.release_) {}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    p_ = std::exchange(o.p_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    release_ = o.release_;
  }
  return *this;
}

void ArgSet::rebind() {
  ptr.assign(buf.size(), nullptr);
  for (std::size_t k = 0; k < buf.size(); ++k) ptr[k] = buf[k].data() ? buf[k].data() : static_cast<void*>(&sc[k]);
}

std::string Case::label() const { return (hidden ? "hidden " : "") + shape->label; }

// ---- inputs ---------------------------------------------------------------

ArgSet scalars_of(const Task& task, const Case& c) {
  ArgSet a;
  a.buf.resize(task.args.size());
  a.sc.resize(task.args.size());
  a.n.assign(task.args.size(), 0);
  for (std::size_t k = 0; k < task.args.size(); ++k) {
    const Arg& arg = task.args[k];
    std::memset(&a.sc[k], 0, sizeof(Scalar));
    if (arg.is_buffer()) {
      a.n[k] = task.elements(arg, *c.shape);
      continue;
    }
    const Value v = task.scalar_value(arg, *c.shape);
    switch (arg.dtype) {
      case DType::f32: a.sc[k].f32 = static_cast<float>(v.as_double()); break;
      case DType::f64: a.sc[k].f64 = v.as_double(); break;
      case DType::i32: a.sc[k].i32 = static_cast<std::int32_t>(v.as_int()); break;
      case DType::i64: a.sc[k].i64 = v.as_int(); break;
      case DType::bf16: throw std::logic_error("a bfloat16 scalar (load_task rejects them)");
    }
  }
  return a;
}

std::uint64_t input_stream(const Case& c, const std::string& tag, const Arg& arg) {
  // One stream per (seed, tag, shape, argument): every trial has fresh,
  // reproducible inputs.
  return fnv1a64(tag + "|" + (c.hidden ? "h" : "v") + std::to_string(c.index) + "|" + arg.name);
}

ArgSet make_inputs(const Task& task, const Case& c, std::uint64_t seed, const std::string& tag) {
  ArgSet a = scalars_of(task, c);
  for (std::size_t k = 0; k < task.args.size(); ++k) {
    const Arg& arg = task.args[k];
    if (!arg.is_buffer()) continue;
    const std::int64_t n = a.n[k];
    a.buf[k] = Buffer(static_cast<std::size_t>(n) * dtype_size(arg.dtype));
    if (!arg.is_input()) {
      poison(arg, a.buf[k], n);
      continue;
    }
    // Each block of kBlock elements draws from its own stream, so blocks
    // are generated in parallel and the values do not depend on the number
    // of threads.
    const std::uint64_t stream_id = input_stream(c, tag, arg);
    const Distribution& d = arg.dist;
    void* base = a.buf[k].data();
    const DType dt = arg.dtype;
    for_blocks(n, kBlock, [&](std::int64_t lo, std::int64_t hi) {
      Rng rng = Rng::derive(seed, stream_id + static_cast<std::uint64_t>(lo / kBlock) * 0x9E3779B97F4A7C15ULL);
      for (std::int64_t i = lo; i < hi; ++i) {
        double v = 0.0;
        switch (d.kind) {
          case Distribution::Kind::uniform: v = d.a + (d.b - d.a) * rng.uniform(); break;
          case Distribution::Kind::normal: v = d.a + d.b * rng.normal(); break;
          case Distribution::Kind::constant: v = d.a; break;
          case Distribution::Kind::integers:
            v = static_cast<double>(rng.range(static_cast<std::int64_t>(d.a), static_cast<std::int64_t>(d.b)));
            break;
        }
        store(dt, base, i, v);
      }
    });
  }
  a.rebind();
  return a;
}

ArgSet allocate_like(const ArgSet& orig) {
  ArgSet a;
  a.sc = orig.sc;
  a.n = orig.n;
  a.buf.resize(orig.buf.size());
  for (std::size_t k = 0; k < orig.buf.size(); ++k)
    if (orig.buf[k].data()) a.buf[k] = Buffer(orig.buf[k].bytes());
  a.rebind();
  return a;
}

ArgSet clone_for_call(const Task& task, const ArgSet& orig, bool poison_outputs) {
  ArgSet a = allocate_like(orig);
  for (std::size_t k = 0; k < orig.buf.size(); ++k) {
    if (!orig.buf[k].data()) continue;
    if (poison_outputs && task.args[k].role == Role::out)
      poison(task.args[k], a.buf[k], a.n[k]);
    else
      copy_bytes(a.buf[k].data(), orig.buf[k].data(), orig.buf[k].bytes());
  }
  return a;
}

// ---- the host space -------------------------------------------------------

namespace {

// Compares one block [lo, hi) of an output on the host. The CUDA worker's
// compare_blocks kernel (device_space.cu) applies the same rules on the GPU;
// change both together (test_device_space compares them).
void compare_block(DType dt, const void* w, const void* g, std::int64_t lo, std::int64_t hi, const Tolerance& tol,
                   bool against_reference, ComparePart& p) {
  for (std::int64_t i = lo; i < hi; ++i) {
    const double x = element(dt, w, i);
    const double y = element(dt, g, i);
    auto mark = [&](Why why) {
      if (p.bad < 0) {
        p.bad = i;
        p.why = why;
      }
    };
    if (against_reference && is_poison(dt, w, i)) {
      // The reference never wrote this element (its own self-check ends
      // here): nothing can be judged against it.
      mark(Why::reference_unwritten);
      continue;
    }
    if (!std::isfinite(x)) {
      // Non-finite expected values must be matched exactly in kind.
      if (!((std::isnan(x) && std::isnan(y)) || x == y)) mark(Why::expected_nonfinite);
      continue;
    }
    if (!std::isfinite(y)) {
      mark(is_poison(dt, g, i) ? Why::unwritten : Why::got_nonfinite);
      continue;
    }
    const double d = std::fabs(y - x);
    p.diff2 += d * d;
    p.want2 += x * x;
    ++p.compared;
    if (d > p.max_abs) {
      p.max_abs = d;
      p.worst = i;
    }
    if (d > tol.atol + tol.rtol * std::fabs(x))
      mark(is_poison(dt, g, i) && !is_poison(dt, w, i) ? Why::unwritten : Why::outside_tolerance);
  }
}

class HostSpace final : public Space {
 public:
  ArgSet make_inputs(const Task& task, const Case& c, std::uint64_t seed, const std::string& tag) override {
    return worker::make_inputs(task, c, seed, tag);
  }
  ArgSet clone_for_call(const Task& task, const ArgSet& orig, bool poison_outputs) override {
    return worker::clone_for_call(task, orig, poison_outputs);
  }
  void copy(Buffer& dst, const Buffer& src) override { copy_bytes(dst.data(), src.data(), src.bytes()); }
  void zero(Buffer& b) override { std::memset(b.data(), 0, b.bytes()); }
  void convert(DType dst_t, Buffer& dst, std::int64_t dst_n, DType src_t, const Buffer& src,
               std::int64_t src_n) override {
    for (std::int64_t i = 0; i < dst_n; ++i) store(dst_t, dst.data(), i, worker::element(src_t, src.data(), i % src_n));
  }
  std::size_t first_difference(const Buffer& a, const Buffer& b) override {
    return worker::first_difference(a.data(), b.data(), a.bytes());
  }
  std::vector<ComparePart> compare(DType t, const Buffer& want, const Buffer& got, std::int64_t n,
                                   const Tolerance& tol, bool against_reference) override {
    std::vector<ComparePart> parts(static_cast<std::size_t>((n + kBlock - 1) / kBlock));
    for_blocks(n, kBlock, [&](std::int64_t lo, std::int64_t hi) {
      compare_block(t, want.data(), got.data(), lo, hi, tol, against_reference,
                    parts[static_cast<std::size_t>(lo / kBlock)]);
    });
    return parts;
  }
  double element(DType t, const Buffer& b, std::int64_t i) override { return worker::element(t, b.data(), i); }
};

}  // namespace

Space& host_space() {
  static HostSpace space;
  return space;
}

std::string first_mismatch(const Task& task, const Case& c, const ArgSet& want, const ArgSet& got, Space& space) {
  for (std::size_t k = 0; k < task.args.size(); ++k) {
    const Arg& arg = task.args[k];
    if (!arg.is_output()) continue;
    for (const ComparePart& p : space.compare(arg.dtype, want.buf[k], got.buf[k], want.n[k], task.tolerance, false))
      if (p.bad >= 0)
        return arg.name + multi_index(task, arg, *c.shape, p.bad) + ": expected " +
               fmt_double(space.element(arg.dtype, want.buf[k], p.bad)) + ", got " +
               fmt_double(space.element(arg.dtype, got.buf[k], p.bad));
  }
  return {};
}

// ---- null candidates ------------------------------------------------------

Kernel null_kernel(const std::string& kind, const Task& task, Reference reference, std::uint64_t seed,
                   Space& space) {
  if (kind == "zeros") {
    return [&task, &space](ArgSet& a, const Case&) {
      for (std::size_t k = 0; k < task.args.size(); ++k)
        if (task.args[k].is_output()) space.zero(a.buf[k]);
    };
  }
  if (kind == "copy") {
    return [&task, &space](ArgSet& a, const Case&) {
      std::size_t src = task.args.size();
      for (std::size_t k = 0; k < task.args.size() && src == task.args.size(); ++k)
        if (task.args[k].is_input()) src = k;
      if (src == task.args.size() || a.n[src] == 0) return;
      for (std::size_t k = 0; k < task.args.size(); ++k) {
        if (task.args[k].role != Role::out) continue;   // an inout output keeps its input: identity
        space.convert(task.args[k].dtype, a.buf[k], a.n[k], task.args[src].dtype, a.buf[src], a.n[src]);
      }
    };
  }
  if (kind == "other_seed") {
    return [&task, reference = std::move(reference), seed, &space](ArgSet& a, const Case& c) {
      ArgSet other = space.make_inputs(task, c, seed ^ 0x5DEECE66DULL, "null-other-seed");
      reference(other);
      for (std::size_t k = 0; k < task.args.size(); ++k)
        if (task.args[k].is_output()) space.copy(a.buf[k], other.buf[k]);
    };
  }
  throw std::invalid_argument("unknown null candidate '" + kind + "'");
}

// ---- the judge ------------------------------------------------------------

Judge::Judge(const Task& task, const Options& opt, Reference reference, Kernel candidate,
             const std::fenv_t& reference_env, const std::fenv_t& candidate_env, Space& space)
    : task_(task), space_(space), opt_(opt), ref_(std::move(reference)), cand_(std::move(candidate)), ref_env_(reference_env),
      cand_env_(candidate_env) {
  for (std::size_t i = 0; i < task.visible.size(); ++i) cases_.push_back(Case{&task.visible[i], false, i});
  for (std::size_t i = 0; i < task.hidden.size(); ++i) cases_.push_back(Case{&task.hidden[i], true, i});
}

void Judge::settle(Status s, const std::string& message) {
  v_.status = s;
  v_.message = message;
  throw Fail{};
}

void Judge::call_reference(ArgSet& a) {
  // The reference runs in the floating-point environment the worker started
  // with, whatever the candidate's library (-ffast-math...) set.
  std::fesetenv(&ref_env_);
  ref_(a);
}

void Judge::call_candidate(ArgSet& a, const Case& c, const std::string& trial) {
  emit({{"event", "call"}, {"trial", trial}, {"shape", c.label()}, {"hidden", c.hidden}});
  const std::uint64_t failures = alloc_failures();
  std::fesetenv(&cand_env_);
  try {
    cand_(a, c);
  } catch (const std::bad_alloc&) {
    std::fesetenv(&ref_env_);
    settle(Status::memory_limit, "the kernel could not allocate memory (std::bad_alloc" +
                                     (alloc_failures() > failures
                                          ? ", " + std::to_string(last_failed_alloc_bytes()) + " bytes"
                                          : std::string()) +
                                     ") during " + trial + " on shape " + c.label());
  } catch (const std::exception& e) {
    std::fesetenv(&ref_env_);
    settle(Status::runtime_error, "the kernel threw an exception (" + demangle(typeid(e).name()) + "): " + e.what());
  } catch (...) {
    std::fesetenv(&ref_env_);
    settle(Status::runtime_error, "the kernel threw an exception of unknown type");
  }
  std::fegetenv(&cand_env_);
  std::fesetenv(&ref_env_);
}

void Judge::compare_outputs(const ArgSet& want, const ArgSet& got, const Case& c, const std::string& trial,
                            bool against_reference) {
  const Tolerance& tol = task_.tolerance;
  for (std::size_t k = 0; k < task_.args.size(); ++k) {
    const Arg& arg = task_.args[k];
    if (!arg.is_output()) continue;
    // Per block: partial sums, the worst element and the first bad one,
    // combined in block order below, so that the figures do not depend on
    // the number of threads (or on the space).
    const std::vector<ComparePart> parts =
        space_.compare(arg.dtype, want.buf[k], got.buf[k], want.n[k], tol, against_reference);
    double diff2 = 0.0, want2 = 0.0, max_abs = 0.0;
    std::int64_t compared = 0, bad = -1, worst = -1;
    Why why_code = Why::none;
    for (const ComparePart& p : parts) {
      diff2 += p.diff2;
      want2 += p.want2;
      compared += p.compared;
      if (p.max_abs > max_abs) {
        max_abs = p.max_abs;
        worst = p.worst;
      }
      if (bad < 0 && p.bad >= 0) {
        bad = p.bad;
        why_code = p.why;
      }
    }
    // The denominator has an absolute floor, atol * sqrt(n): the norm of an
    // output whose every element is atol. Without it an output that is (near)
    // zero turns round-off far below atol into a huge relative error and
    // rejects correct candidates; with it such outputs are judged on their
    // RMS error against atol. 1e-30 only guards atol = 0 with a zero output.
    const double l2_floor = std::max(tol.atol * std::sqrt(static_cast<double>(compared)), 1e-30);
    const double rel_l2 = std::sqrt(diff2) / std::max(std::sqrt(want2), l2_floor);
    std::string why = why_text(why_code);
    if (against_reference) {
      v_.max_abs_error = std::max(v_.max_abs_error, max_abs);
      v_.rel_l2_error = std::max(v_.rel_l2_error, rel_l2);
    }
    if (bad < 0 && rel_l2 > tol.rel_l2 && diff2 > 0.0) {
      bad = worst;
      why = "relative L2 error " + fmt_double(rel_l2) + " above rel_l2 " + fmt_double(tol.rel_l2);
    }
    if (bad >= 0) {
      Mismatch m;
      m.arg = arg.name;
      m.shape = c.label();
      m.trial = trial;
      m.flat_index = bad;
      m.index = multi_index(task_, arg, *c.shape, bad);
      m.expected = space_.element(arg.dtype, want.buf[k], bad);
      m.got = space_.element(arg.dtype, got.buf[k], bad);
      v_.mismatch = m;
      mismatch_hidden_ = c.hidden;
      std::string what = against_reference ? "differs from the reference"
                                           : "differs between two runs on the same inputs";
      settle(Status::wrong_answer, "output '" + arg.name + "' " + what + " at " + m.index + " (" + trial +
                                       ", shape " + c.label() + "): expected " + fmt_double(m.expected) +
                                       ", got " + fmt_double(m.got) + ": " + why);
    }
  }
}

void Judge::correctness() {
  v_.stage = Stage::correctness;
  emit({{"event", "stage"}, {"stage", "correctness"}});
  for (int t = 0; t < opt_.trials; ++t) {
    const std::string trial = "trial " + std::to_string(t + 1);
    for (const Case& c : cases_) {
      const ArgSet orig = space_.make_inputs(task_, c, opt_.seed, "trial" + std::to_string(t));
      ArgSet got = space_.clone_for_call(task_, orig, true);

      set_alloc_poison(true);
      call_candidate(got, c, trial);
      set_alloc_poison(false);

      // Inputs are compared byte for byte with the pristine copy the
      // candidate never saw (stronger than a hash, and parallel).
      for (std::size_t k = 0; k < task_.args.size(); ++k) {
        if (task_.args[k].role != Role::in) continue;
        const std::size_t at = space_.first_difference(got.buf[k], orig.buf[k]);
        if (at >= got.buf[k].bytes()) continue;
        const std::size_t es = dtype_size(task_.args[k].dtype);
        const auto i = static_cast<std::int64_t>(at / es);
        Mismatch m;
        m.arg = task_.args[k].name;
        m.shape = c.label();
        m.trial = "input-modified";
        m.flat_index = i;
        m.index = multi_index(task_, task_.args[k], *c.shape, i);
        m.expected = space_.element(task_.args[k].dtype, orig.buf[k], i);
        m.got = space_.element(task_.args[k].dtype, got.buf[k], i);
        v_.mismatch = m;
        mismatch_hidden_ = c.hidden;
        settle(Status::wrong_answer, "the kernel modified its input '" + m.arg + "' (at " + m.index + ", " +
                                         trial + ", shape " + c.label() + ")");
      }

      // The reference runs after the candidate, so that its outputs for
      // these inputs do not exist while the candidate runs.
      ArgSet want = space_.clone_for_call(task_, orig, true);
      call_reference(want);
      compare_outputs(want, got, c, trial, true);

      if (t == 0) {
        // Same inputs again, outputs poisoned again: the second run must
        // agree with the first within the task's tolerance (threaded
        // reductions may legitimately differ in the last bits).
        ArgSet again = space_.clone_for_call(task_, orig, true);
        set_alloc_poison(true);
        call_candidate(again, c, "repeat-consistency");
        set_alloc_poison(false);
        compare_outputs(got, again, c, "repeat-consistency", false);
      }
    }
  }
}

void Judge::timing() {
  v_.stage = Stage::timing;
  emit({{"event", "stage"}, {"stage", "timing"}});
  const std::size_t flush_bytes = static_cast<std::size_t>(std::max<std::int64_t>(opt_.flush_bytes, 0));
  Buffer flush(std::max<std::size_t>(flush_bytes, 64));
  std::memset(flush.data(), 1, flush.bytes());
  volatile std::uint64_t sink = 0;
  auto flush_caches = [&] {
    // Reads and writes every cache line of a buffer larger than the last
    // level cache, so that each timed call starts from a cold cache.
    auto* p = static_cast<std::uint64_t*>(flush.data());
    const std::size_t n = flush.bytes() / sizeof(std::uint64_t);
    std::uint64_t s = 0;
    for (std::size_t i = 0; i < n; i += 8) {
      s += p[i];
      p[i] = s;
    }
    sink = sink + s;
  };

  std::size_t visible = 0;
  for (const Case& c : cases_) visible += c.hidden ? 0 : 1;
  const double budget = opt_.budget_seconds / static_cast<double>(std::max<std::size_t>(visible, 1));
  double log_ratio = 0.0;
  int shapes = 0;
  int min_reps = std::numeric_limits<int>::max();
  for (const Case& c : cases_) {
    if (c.hidden) continue;
    const ArgSet orig = make_inputs(task_, c, opt_.seed, "timing");
    ArgSet ca = clone_for_call(task_, orig, false);
    ArgSet ra = clone_for_call(task_, orig, false);
    auto restore = [&](ArgSet& a) {
      // In-place kernels would otherwise work on their own results, which
      // may drift towards inf/denormals and distort the timings.
      for (std::size_t k = 0; k < task_.args.size(); ++k)
        if (task_.args[k].role == Role::inout) std::memcpy(a.buf[k].data(), orig.buf[k].data(), a.buf[k].bytes());
    };
    auto time_cand = [&] {
      restore(ca);
      flush_caches();
      std::fesetenv(&cand_env_);
      const auto t0 = Clock::now();
      cand_(ca, c);
      const auto t1 = Clock::now();
      std::fesetenv(&ref_env_);
      return std::chrono::duration<double, std::nano>(t1 - t0).count();
    };
    auto time_ref = [&] {
      restore(ra);
      flush_caches();
      const auto t0 = Clock::now();
      ref_(ra);
      const auto t1 = Clock::now();
      return std::chrono::duration<double, std::nano>(t1 - t0).count();
    };
    emit({{"event", "call"}, {"trial", "timing"}, {"shape", c.label()}, {"hidden", false}});
    for (int i = 0; i < opt_.warmup; ++i) {
      time_cand();
      time_ref();
    }
    std::vector<double> tc, tr;
    const auto start = Clock::now();
    for (int rep = 0; rep < std::max(opt_.max_repeats, 1); ++rep) {
      // Interleaved, alternating order: drifts in clock speed or load hit
      // both sides alike.
      if (rep % 2 == 0) {
        tr.push_back(time_ref());
        tc.push_back(time_cand());
      } else {
        tc.push_back(time_cand());
        tr.push_back(time_ref());
      }
      const auto now = Clock::now();
      const double spent = std::chrono::duration<double>(now - start).count();
      if (rep + 1 >= opt_.min_repeats && spent >= budget) break;
      if (opt_.wall_seconds > 0 &&
          std::chrono::duration<double>(now - opt_.started).count() > 0.6 * opt_.wall_seconds)
        break;   // near the wall-clock limit: settle for fewer repeats
    }
    const double cm = quantile(tc, 0.5), rm = quantile(tr, 0.5);
    const double ciqr = quantile(tc, 0.75) - quantile(tc, 0.25);
    const double riqr = quantile(tr, 0.75) - quantile(tr, 0.25);
    v_.cand_median_ns += cm;
    v_.ref_median_ns += rm;
    v_.cand_iqr_ns += ciqr;
    v_.ref_iqr_ns += riqr;
    const double ratio = rm / std::max(cm, 1.0);
    log_ratio += std::log(std::max(ratio, 1e-12));
    ++shapes;
    min_reps = std::min(min_reps, static_cast<int>(tc.size()));
    shape_timings_.push_back({{"shape", c.label()},
                              {"cand_median_ns", cm},
                              {"cand_iqr_ns", ciqr},
                              {"ref_median_ns", rm},
                              {"ref_iqr_ns", riqr},
                              {"repeats", tc.size()},
                              {"speedup", ratio}});
  }
  v_.repeats = shapes ? min_reps : 0;
  v_.speedup = shapes ? std::exp(log_ratio / shapes) : 0.0;
}

nlohmann::json Judge::run() {
  try {
    correctness();
    v_.status = Status::correct;
    v_.message = "correct on " + std::to_string(opt_.trials) + " trials x " + std::to_string(cases_.size()) +
                 " shapes";
    if (opt_.timing && opt_.mode == "judge") {
      timing();
      std::ostringstream m;
      m.precision(3);
      m << "correct; speedup " << v_.speedup << "x (" << v_.cand_median_ns / 1e3 << " us vs reference "
        << v_.ref_median_ns / 1e3 << " us)";
      v_.message = m.str();
    }
    v_.stage = Stage::done;
  } catch (const Fail&) {
  }
  return {{"event", "result"},
          {"verdict", to_json(v_)},
          {"mismatch_hidden", mismatch_hidden_},
          {"shape_timings", shape_timings_}};
}

}  // namespace kevo::cpu::worker
