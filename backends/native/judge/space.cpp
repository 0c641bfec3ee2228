#include "space.hpp"

#include "kevo/core/hash.hpp"
#include "kevo/core/rng.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kevo::native::judge {

namespace {

// Elements per block of the parallel bulk work (and per input RNG stream).
constexpr std::int64_t kBlock = kBlockElements;
int g_threads = 1;

// Fills elements [lo, hi) of base with the dtype's poison.
void poison_range(const Poison& P, DType t, void* base, std::int64_t lo, std::int64_t hi) {
  switch (t) {
    case DType::f32: std::fill(static_cast<std::uint32_t*>(base) + lo, static_cast<std::uint32_t*>(base) + hi, P.f32); break;
    case DType::f64: std::fill(static_cast<std::uint64_t*>(base) + lo, static_cast<std::uint64_t*>(base) + hi, P.f64); break;
    case DType::i32: std::fill(static_cast<std::int32_t*>(base) + lo, static_cast<std::int32_t*>(base) + hi, P.i32); break;
    case DType::i64: std::fill(static_cast<std::int64_t*>(base) + lo, static_cast<std::int64_t*>(base) + hi, P.i64); break;
    case DType::bf16: std::fill(static_cast<std::uint16_t*>(base) + lo, static_cast<std::uint16_t*>(base) + hi, P.bf16); break;
  }
}

void poison(const Poison& P, const Arg& a, Buffer& b, std::int64_t n) {
  for_blocks(n, 4 * kBlock, [&](std::int64_t lo, std::int64_t hi) { poison_range(P, a.dtype, b.data(), lo, hi); });
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
std::size_t first_difference_bytes(const void* a, const void* b, std::size_t bytes) {
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

bool is_poison(const Poison& P, DType t, const void* base, std::int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<const std::uint32_t*>(base)[i] == P.f32;
    case DType::f64: return static_cast<const std::uint64_t*>(base)[i] == P.f64;
    case DType::i32: return static_cast<const std::int32_t*>(base)[i] == P.i32;
    case DType::i64: return static_cast<const std::int64_t*>(base)[i] == P.i64;
    case DType::bf16: return static_cast<const std::uint16_t*>(base)[i] == P.bf16;
  }
  return false;
}

double element_at(DType t, const void* base, std::int64_t i) {
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

void release_nothing(void*) {}

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

std::string fmt_double(double v) {
  std::ostringstream o;
  o.precision(9);
  o << v;
  return o.str();
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

// ---- Poison -----------------------------------------------------------------

std::uint64_t InputKey::stream(std::uint64_t seed, std::uint64_t id) const {
  unsigned char bytes[16];
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<unsigned char>(seed >> (8 * i));
    bytes[8 + i] = static_cast<unsigned char>(id >> (8 * i));
  }
  return siphash24(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes), k0, k1);
}

InputKey InputKey::draw() {
  InputKey k;
  std::uint64_t w[2] = {0, 0};
  std::size_t got = 0;
  while (got < sizeof w) {
    const ssize_t n = ::getrandom(reinterpret_cast<char*>(w) + got, sizeof w - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("getrandom failed: no key for the judgement's inputs");
    got += static_cast<std::size_t>(n);
  }
  k.k0 = w[0];
  k.k1 = w[1];
  return k;
}

Poison keyed_poison(const InputKey& key, std::uint64_t seed) {
  return Poison::draw(key.stream(seed, 0x706F69736F6EULL));   // "poison"
}

Poison Poison::draw(std::uint64_t entropy) {
  Rng rng = Rng::derive(entropy, 0x706F69736F6EULL);   // "poison"
  Poison p;
  const auto bits = [&] { return rng.next(); };
  p.f32 = 0x7FC00000u | (static_cast<std::uint32_t>(bits()) & 0x3FFFFFu);
  if (p.f32 == 0x7FC00000u) p.f32 |= 1u;
  p.f64 = 0x7FF8000000000000ull | (bits() & 0x0007FFFFFFFFFFFFull);
  if (p.f64 == 0x7FF8000000000000ull) p.f64 |= 1u;
  p.bf16 = static_cast<std::uint16_t>(0x7FC0u | (1u + static_cast<std::uint16_t>(bits() % 62u)));
  auto sentinel = [](std::uint64_t v) { return v == 0 || v == ~std::uint64_t{0} || v == 1 ? v ^ 0x5A5A5A5A5A5A5A5AULL : v; };
  p.i32 = static_cast<std::int32_t>(static_cast<std::uint32_t>(sentinel(bits() >> 32) | 0x40000000u));
  p.i64 = static_cast<std::int64_t>(sentinel(bits()) | 0x4000000000000000ull);
  return p;
}

// ---- Buffer ---------------------------------------------------------------

Buffer::Buffer(std::size_t bytes) : bytes_(bytes) {
  const std::size_t rounded = std::max<std::size_t>(64, (bytes + 63) / 64 * 64);
  p_ = std::aligned_alloc(64, rounded);
  if (!p_) throw std::bad_alloc();
}
Buffer Buffer::view(void* p, std::size_t bytes) { return Buffer(p, bytes, release_nothing); }
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

std::string Case::label() const {
  switch (kind) {
    case Kind::visible: return shape->label;
    case Kind::hidden: return "hidden " + shape->label;
    case Kind::drawn: return shape->label.rfind("drawn ", 0) == 0 ? shape->label : "drawn " + shape->label;
  }
  return shape->label;
}

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
  // One stream per (seed, tag, case, argument): every call has fresh,
  // reproducible inputs.
  const char* kind = c.kind == Case::Kind::visible ? "v" : c.kind == Case::Kind::hidden ? "h" : "d";
  return fnv1a64(tag + "|" + kind + std::to_string(c.index) + "|" + arg.name);
}

std::size_t layout_bytes(const Task& task, const Case& c, std::size_t align) {
  std::size_t total = 0;
  for (const Arg& a : task.args)
    if (a.is_buffer()) {
      const std::size_t b = static_cast<std::size_t>(task.elements(a, *c.shape)) * dtype_size(a.dtype);
      total += std::max<std::size_t>((b + align - 1) / align * align, align);
    }
  return total;
}

std::size_t draw_layout_bound(const Task& task, std::size_t align) {
  if (task.draw.empty()) return 0;
  const auto cap = static_cast<std::size_t>(task.draw.max_bytes);
  std::size_t per_buffer = 0, buffers = 0;
  for (const Arg& a : task.args)
    if (a.is_buffer()) {
      // One buffer holds at most max_bytes, and max_elements elements.
      std::size_t b = cap;
      if (task.draw.max_elements > 0)
        b = std::min(b, static_cast<std::size_t>(task.draw.max_elements) * dtype_size(a.dtype));
      per_buffer += std::max<std::size_t>((b + align - 1) / align * align, align);
      ++buffers;
    }
  // All of them hold at most max_bytes, and each rounds up by less than
  // `align` (or is `align` when empty).
  return std::min(per_buffer, cap + buffers * align);
}

ArenaSize arena_size(const Task& task, const std::vector<Shape>& drawn, std::size_t align) {
  auto layout = [&](const Shape& s, Case::Kind k) { return layout_bytes(task, Case{&s, k, 0}, align); };
  ArenaSize a;
  for (const auto& s : task.visible) a.bytes = std::max(a.bytes, layout(s, Case::Kind::visible));
  a.bytes = std::max(a.bytes, draw_layout_bound(task, align));
  // Within the bound by construction (draw_shapes keeps to the caps): the
  // max only keeps every case inside the arena.
  for (const auto& s : drawn) a.bytes = std::max(a.bytes, layout(s, Case::Kind::drawn));
  a.hidden_bytes = a.bytes;
  for (const auto& s : task.hidden)
    if (const std::size_t b = layout(s, Case::Kind::hidden); b > a.hidden_bytes) {
      a.hidden_bytes = b;
      a.reveals = &s;
    }
  return a;
}

namespace {

// Draws inputs into a's buffers (allocated for case c) and poisons its
// outputs.
void host_generate(const Task& task, const Case& c, ArgSet& a, std::uint64_t seed, const std::string& tag,
                   const DistributionOverride& override_dist, const Poison& P, const InputKey& K) {
  for (std::size_t k = 0; k < task.args.size(); ++k) {
    const Arg& arg = task.args[k];
    if (!arg.is_buffer()) continue;
    const std::int64_t n = a.n[k];
    if (!arg.is_input()) {
      poison(P, arg, a.buf[k], n);
      continue;
    }
    // Each block of kBlock elements draws from its own stream, so blocks
    // are generated in parallel and the values do not depend on the number
    // of threads.
    const std::uint64_t stream_id = input_stream(c, tag, arg);
    const Distribution* over = override_dist ? override_dist(arg) : nullptr;
    const Distribution& d = over ? *over : arg.dist;
    void* base = a.buf[k].data();
    const DType dt = arg.dtype;
    for_blocks(n, kBlock, [&](std::int64_t lo, std::int64_t hi) {
      Rng rng = Rng::derive(K.stream(seed, stream_id + static_cast<std::uint64_t>(lo / kBlock) * 0x9E3779B97F4A7C15ULL),
                            0x696E70757473ULL);   // "inputs"
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
}

ArgSet host_make_inputs(const Task& task, const Case& c, std::uint64_t seed, const std::string& tag,
                        const DistributionOverride& override_dist, const Poison& P, const InputKey& K) {
  ArgSet a = scalars_of(task, c);
  for (std::size_t k = 0; k < task.args.size(); ++k)
    if (task.args[k].is_buffer())
      a.buf[k] = Buffer(static_cast<std::size_t>(a.n[k]) * dtype_size(task.args[k].dtype));
  host_generate(task, c, a, seed, tag, override_dist, P, K);
  a.rebind();
  return a;
}

// Compares one block [lo, hi) of an output on the host. The CUDA judge's
// compare_blocks kernel (device_space.cu) applies the same rules on the GPU;
// change both together (test_device_space compares them).
void compare_block(const Poison& P, DType dt, const void* w, const void* g, std::int64_t lo, std::int64_t hi,
                   const Tolerance& tol, bool against_reference, ComparePart& p) {
  for (std::int64_t i = lo; i < hi; ++i) {
    const double x = element_at(dt, w, i);
    const double y = element_at(dt, g, i);
    auto mark = [&](Why why) {
      if (p.bad < 0) {
        p.bad = i;
        p.why = why;
      }
    };
    if (against_reference && is_poison(P, dt, w, i)) {
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
      mark(is_poison(P, dt, g, i) ? Why::unwritten : Why::got_nonfinite);
      continue;
    }
    const double d = std::fabs(y - x);
    p.diff2 += d * d;
    p.want2 += x * x;
    const double ds = d * kL2Scale, xs = x * kL2Scale;
    p.diff2_scaled += ds * ds;
    p.want2_scaled += xs * xs;
    ++p.compared;
    if (d > p.max_abs) {
      p.max_abs = d;
      p.worst = i;
    }
    if (d > tol.atol + tol.rtol * std::fabs(x))
      mark(is_poison(P, dt, g, i) && !is_poison(P, dt, w, i) ? Why::unwritten : Why::outside_tolerance);
  }
}

class HostSpace final : public Space {
 public:
  ArgSet make_inputs(const Task& task, const Case& c, std::uint64_t seed, const std::string& tag,
                     const DistributionOverride& dist) override {
    return host_make_inputs(task, c, seed, tag, dist, poison(), input_key());
  }
  void fill_inputs(const Task& task, const Case& c, ArgSet& a, std::uint64_t seed, const std::string& tag,
                   const DistributionOverride& dist) override {
    host_generate(task, c, a, seed, tag, dist, poison(), input_key());
  }
  ArgSet clone_for_call(const Task& task, const ArgSet& orig, bool poison_outputs) override {
    ArgSet a = allocate_like(orig);
    fill(task, a, orig, poison_outputs);
    return a;
  }
  void load(const Task& task, ArgSet& dst, const ArgSet& orig) override { fill(task, dst, orig, true); }
  void copy(Buffer& dst, const Buffer& src) override { copy_bytes(dst.data(), src.data(), src.bytes()); }
  void zero(Buffer& b) override { std::memset(b.data(), 0, b.bytes()); }
  void convert(DType dst_t, Buffer& dst, std::int64_t dst_n, DType src_t, const Buffer& src,
               std::int64_t src_n) override {
    for (std::int64_t i = 0; i < dst_n; ++i) store(dst_t, dst.data(), i, element_at(src_t, src.data(), i % src_n));
  }
  std::size_t first_difference(const Buffer& a, const Buffer& b) override {
    return first_difference_bytes(a.data(), b.data(), a.bytes());
  }
  std::vector<ComparePart> compare(DType t, const Buffer& want, const Buffer& got, std::int64_t n,
                                   const Tolerance& tol, bool against_reference) override {
    std::vector<ComparePart> parts(static_cast<std::size_t>((n + kBlock - 1) / kBlock));
    const Poison P = poison();
    for_blocks(n, kBlock, [&](std::int64_t lo, std::int64_t hi) {
      compare_block(P, t, want.data(), got.data(), lo, hi, tol, against_reference,
                    parts[static_cast<std::size_t>(lo / kBlock)]);
    });
    return parts;
  }
  double element(DType t, const Buffer& b, std::int64_t i) override { return element_at(t, b.data(), i); }

 private:
  void fill(const Task& task, ArgSet& a, const ArgSet& orig, bool poison_outputs) {
    for (std::size_t k = 0; k < orig.buf.size(); ++k) {
      if (!orig.buf[k].data()) continue;
      if (poison_outputs && task.args[k].role == Role::out)
        judge::poison(this->poison(), task.args[k], a.buf[k], a.n[k]);
      else
        copy_bytes(a.buf[k].data(), orig.buf[k].data(), orig.buf[k].bytes());
    }
    a.sc = orig.sc;
    a.rebind();
  }
};

}  // namespace

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

Space& host_space() {
  static HostSpace space;
  return space;
}

const char* why_text(Why w) {
  switch (w) {
    case Why::none: break;
    case Why::reference_unwritten: return "the reference left this element unwritten";
    case Why::expected_nonfinite: return "expected a non-finite value";
    case Why::unwritten:
      return "the element still holds the NaN/sentinel outputs are pre-filled with: never written, or "
             "accumulated into without being initialised";
    case Why::got_nonfinite: return "got a non-finite value";
    case Why::outside_tolerance: return "outside atol + rtol*|expected|";
  }
  return "";
}

OutputDiff diff_output(Space& space, DType t, const Buffer& want, const Buffer& got, std::int64_t n, const Tolerance& tol,
                       bool against_reference) {
  // Per block: partial sums, the worst element and the first bad one,
  // combined in block order, so that the figures do not depend on the
  // number of threads (or on the space).
  const std::vector<ComparePart> parts = space.compare(t, want, got, n, tol, against_reference);
  double diff2 = 0.0, want2 = 0.0, diff2_scaled = 0.0, want2_scaled = 0.0;
  std::int64_t compared = 0, worst = -1;
  OutputDiff d;
  Why why_code = Why::none;
  for (const ComparePart& p : parts) {
    diff2 += p.diff2;
    want2 += p.want2;
    diff2_scaled += p.diff2_scaled;
    want2_scaled += p.want2_scaled;
    compared += p.compared;
    if (p.max_abs > d.max_abs) {
      d.max_abs = p.max_abs;
      worst = p.worst;
    }
    if (d.bad < 0 && p.bad >= 0) {
      d.bad = p.bad;
      why_code = p.why;
    }
  }
  const double l2_floor = std::max(tol.atol * std::sqrt(static_cast<double>(compared)), 1e-30);
  if (std::isfinite(diff2) && std::isfinite(want2))
    d.rel_l2 = std::sqrt(diff2) / std::max(std::sqrt(want2), l2_floor);
  else  // squares past the largest double: the scaled sums (an infinite difference stays infinite)
    d.rel_l2 = std::sqrt(diff2_scaled) / std::max(std::sqrt(want2_scaled), l2_floor * kL2Scale);
  d.why = why_text(why_code);
  if (d.bad < 0 && d.rel_l2 > tol.rel_l2 && diff2 > 0.0) {
    d.bad = worst;
    d.why = "relative L2 error " + fmt_double(d.rel_l2) + " above rel_l2 " + fmt_double(tol.rel_l2);
  }
  return d;
}

}  // namespace kevo::native::judge
