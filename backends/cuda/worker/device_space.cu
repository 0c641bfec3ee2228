#include "device_space.hpp"

#include "slot.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace kevo::cuda::worker {

namespace {

using std::int64_t;
using std::uint64_t;

constexpr int kThreads = 256;
constexpr int64_t kBlock = w::kBlockElements;
constexpr int kMaxGrid = 8192;   // grid-stride loops beyond this

void check(cudaError_t e, const std::string& when) {
  if (e == cudaSuccess) return;
  throw std::runtime_error(std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") " +
                           when);
}

// Launches are checked, then the device is synchronized: the space's work
// is done, and any error it met surfaces here, when the call returns.
void finish(const char* what) {
  check(cudaGetLastError(), std::string("launching the protocol's ") + what);
  check(cudaDeviceSynchronize(), std::string("in the protocol's ") + what);
}

// The protocol allocates the same sizes trial after trial. The device's
// stream-ordered pool keeps freed blocks for the next allocation instead of
// handing them back to the driver (cudaMalloc/cudaFree of 16-256 MB blocks
// cost milliseconds and synchronize); outputs are poisoned and inputs
// regenerated on every use, so nothing of an earlier trial is visible.
void release(void* p) { (void)cudaFreeAsync(p, 0); }

void keep_freed_blocks() {
  int dev = 0;
  cudaMemPool_t pool = nullptr;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess) return;
  std::uint64_t keep = ~std::uint64_t{0};
  (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
}

w::Buffer allocate(std::size_t bytes) {
  static const bool pooled = (keep_freed_blocks(), true);
  (void)pooled;
  void* p = nullptr;
  check(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 1), 0),
        "allocating " + std::to_string(bytes) + " device bytes");
  return w::Buffer(p, bytes, &release);
}

unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxGrid));
}

// dtype codes of the kernels (kevo::DType's order does not matter to them).
enum Dt : int { kF32, kF64, kI32, kI64, kBF16 };

int code(DType t) {
  switch (t) {
    case DType::f32: return kF32;
    case DType::f64: return kF64;
    case DType::i32: return kI32;
    case DType::i64: return kI64;
    case DType::bf16: return kBF16;
  }
  return kF32;
}

// ---- device helpers ---------------------------------------------------------

// splitmix64's finaliser over a counter: a counter-based generator, so each
// element's value depends only on (key, index), whatever the launch shape.
__host__ __device__ inline uint64_t mix(uint64_t key, uint64_t counter) {
  uint64_t z = key + (counter + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

__device__ inline double unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

__device__ inline double bf16_bits_to_double(unsigned short b) {
  return static_cast<double>(__uint_as_float(static_cast<unsigned>(b) << 16));
}

// Correctly rounded double -> bf16, as the host's bf16_from_double: to
// float towards zero with a sticky bit, then to nearest even.
__device__ inline unsigned short bf16_from(double v) {
  if (isnan(v)) return signbit(v) ? 0xFFC0 : 0x7FC0;
  const float f = __double2float_rz(v);
  unsigned u = __float_as_uint(f);
  if (static_cast<double>(f) != v) u |= 1u;
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<unsigned short>(u >> 16);
}

__device__ inline double load(int dt, const void* p, int64_t i) {
  switch (dt) {
    case kF32: return static_cast<const float*>(p)[i];
    case kF64: return static_cast<const double*>(p)[i];
    case kI32: return static_cast<const int*>(p)[i];
    case kI64: return static_cast<double>(static_cast<const long long*>(p)[i]);
    default: return bf16_bits_to_double(static_cast<const unsigned short*>(p)[i]);
  }
}

__device__ inline void save(int dt, void* p, int64_t i, double v) {
  switch (dt) {
    case kF32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case kF64: static_cast<double*>(p)[i] = v; break;
    case kI32: static_cast<int*>(p)[i] = static_cast<int>(v); break;
    case kI64: static_cast<long long*>(p)[i] = static_cast<long long>(v); break;
    default: static_cast<unsigned short*>(p)[i] = bf16_from(v); break;
  }
}

// The judgement's poison (w::Poison, drawn per judgement), as kernel arguments.
struct DevPoison {
  unsigned f32;
  unsigned long long f64;
  int i32;
  long long i64;
  unsigned short bf16;
};

DevPoison dev_poison(const w::Poison& P) {
  return DevPoison{P.f32, static_cast<unsigned long long>(P.f64), P.i32, static_cast<long long>(P.i64), P.bf16};
}

__device__ inline bool poisoned(int dt, const void* p, int64_t i, const DevPoison& P) {
  switch (dt) {
    case kF32: return static_cast<const unsigned*>(p)[i] == P.f32;
    case kF64: return static_cast<const unsigned long long*>(p)[i] == P.f64;
    case kI32: return static_cast<const int*>(p)[i] == P.i32;
    case kI64: return static_cast<const long long*>(p)[i] == P.i64;
    default: return static_cast<const unsigned short*>(p)[i] == P.bf16;
  }
}

// ---- kernels ----------------------------------------------------------------

struct GenParams {
  int dt;
  int kind;   // Distribution::Kind as int
  double a, b;
  uint64_t key;
};

// Into `base` and, where given, the same values into `twin` (both sides of
// a timed call: one draw, two stores).
__global__ void generate(void* base, void* twin, int64_t n, GenParams p) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const uint64_t h = mix(p.key, 2 * static_cast<uint64_t>(i));
    double v = p.a;
    switch (p.kind) {
      case static_cast<int>(Distribution::Kind::uniform): v = p.a + (p.b - p.a) * unit(h); break;
      case static_cast<int>(Distribution::Kind::normal): {
        // Box-Muller on two draws of this element; u1 in (0, 1].
        const double u1 = static_cast<double>((h >> 11) + 1) * 0x1.0p-53;
        const double u2 = unit(mix(p.key, 2 * static_cast<uint64_t>(i) + 1));
        v = p.a + p.b * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
        break;
      }
      case static_cast<int>(Distribution::Kind::integers): {
        const auto lo = static_cast<long long>(p.a), hi = static_cast<long long>(p.b);
        const auto span = static_cast<unsigned long long>(hi - lo) + 1ULL;   // 0: the whole range
        const unsigned long long r = span == 0 ? h : __umul64hi(h, span);
        v = static_cast<double>(lo + static_cast<long long>(r));
        break;
      }
      default: break;   // constant
    }
    save(p.dt, base, i, v);
    if (twin) save(p.dt, twin, i, v);
  }
}

__device__ inline void put_poison(int dt, void* base, int64_t i, const DevPoison& P) {
  switch (dt) {
    case kF32: static_cast<unsigned*>(base)[i] = P.f32; break;
    case kF64: static_cast<unsigned long long*>(base)[i] = P.f64; break;
    case kI32: static_cast<int*>(base)[i] = P.i32; break;
    case kI64: static_cast<long long*>(base)[i] = P.i64; break;
    default: static_cast<unsigned short*>(base)[i] = P.bf16; break;
  }
}

// `base` and, where given, `twin` poisoned.
__global__ void fill_poison(int dt, void* base, void* twin, int64_t n, DevPoison P) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    put_poison(dt, base, i, P);
    if (twin) put_poison(dt, twin, i, P);
  }
}

__global__ void convert_wrapping(int dst_t, void* dst, int64_t dst_n, int src_t, const void* src, int64_t src_n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < dst_n; i += step)
    save(dst_t, dst, i, load(src_t, src, i % src_n));
}

// The first differing byte: 8-byte words in parallel, the tail by one thread.
__global__ void first_diff(const unsigned char* a, const unsigned char* b, int64_t bytes,
                           unsigned long long* first) {
  const int64_t words = bytes / 8;
  const auto* wa = reinterpret_cast<const unsigned long long*>(a);
  const auto* wb = reinterpret_cast<const unsigned long long*>(b);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = tid; i < words; i += step) {
    const unsigned long long x = wa[i] ^ wb[i];
    if (x) atomicMin(first, static_cast<unsigned long long>(i * 8 + (__ffsll(static_cast<long long>(x)) - 1) / 8));
  }
  if (tid == 0)
    for (int64_t i = words * 8; i < bytes; ++i)
      if (a[i] != b[i]) {
        atomicMin(first, static_cast<unsigned long long>(i));
        break;
      }
}

// w::ComparePart without its initialisers, for device code.
struct Part {
  double diff2, want2, max_abs, diff2_scaled, want2_scaled;
  long long compared, bad, worst;
  int why;
};

__device__ inline void merge(Part& x, const Part& y) {
  x.diff2 += y.diff2;
  x.want2 += y.want2;
  x.diff2_scaled += y.diff2_scaled;
  x.want2_scaled += y.want2_scaled;
  x.compared += y.compared;
  if (y.max_abs > x.max_abs || (y.max_abs == x.max_abs && y.worst >= 0 && (x.worst < 0 || y.worst < x.worst))) {
    x.max_abs = y.max_abs;
    x.worst = y.worst;
  }
  if (y.bad >= 0 && (x.bad < 0 || y.bad < x.bad)) {
    x.bad = y.bad;
    x.why = y.why;
  }
}

// One CUDA block per kBlock elements; the sums run in a fixed order (thread
// strides, then a fixed tree), so the figures are the same on every run.
// The per-element rules mirror compare_block in judge.cpp one for one (a
// shared __host__ __device__ helper would make the host build need nvcc);
// test_device_space checks that both give the same bad and worst elements,
// reasons and sums on the same buffers.
//
// kCompareThreads per block: the grid is only n / kBlock blocks (256 for 16M
// elements), too few for a GPU's memory system at 256 threads each (the
// check of a timed axpy output took about 200 us on an H100); 512 keeps the
// tree's Parts within the 48 KB of static shared memory.
constexpr int kCompareThreads = 512;

__global__ void __launch_bounds__(kCompareThreads)
    compare_blocks(int dt, const void* want, const void* got, int64_t n, double atol, double rtol,
                   int against_reference, DevPoison P, Part* out) {
  __shared__ Part s[kCompareThreads];
  const int64_t lo = static_cast<int64_t>(blockIdx.x) * kBlock;
  const int64_t hi = min(n, lo + kBlock);
  Part p{0.0, 0.0, 0.0, 0.0, 0.0, 0, -1, -1, 0};
  auto mark = [&](int64_t i, w::Why why) {
    if (p.bad < 0) {   // indices rise within a thread: the first is the lowest
      p.bad = i;
      p.why = static_cast<int>(why);
    }
  };
  for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    if (against_reference && poisoned(dt, want, i, P)) {
      mark(i, w::Why::reference_unwritten);
      continue;
    }
    const double x = load(dt, want, i), y = load(dt, got, i);
    if (!isfinite(x)) {
      if (!((isnan(x) && isnan(y)) || x == y)) mark(i, w::Why::expected_nonfinite);
      continue;
    }
    if (!isfinite(y)) {
      mark(i, poisoned(dt, got, i, P) ? w::Why::unwritten : w::Why::got_nonfinite);
      continue;
    }
    const double d = fabs(y - x);
    p.diff2 += d * d;
    p.want2 += x * x;
    const double ds = d * w::kL2Scale, xs = x * w::kL2Scale;
    p.diff2_scaled += ds * ds;
    p.want2_scaled += xs * xs;
    ++p.compared;
    if (d > p.max_abs) {
      p.max_abs = d;
      p.worst = i;
    }
    if (d > atol + rtol * fabs(x))
      mark(i, poisoned(dt, got, i, P) && !poisoned(dt, want, i, P) ? w::Why::unwritten : w::Why::outside_tolerance);
  }
  s[threadIdx.x] = p;
  __syncthreads();
  for (int half = kCompareThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) merge(s[threadIdx.x], s[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// ---- the space --------------------------------------------------------------

class DeviceSpace final : public w::Space {
 public:
  w::ArgSet make_inputs(const Task& task, const w::Case& c, uint64_t seed, const std::string& tag,
                        const w::DistributionOverride& dist) override {
    w::ArgSet a = w::scalars_of(task, c);
    // Allocations first, outside the slot: a pool that must grow asks the
    // driver, which may be busy creating another worker's context (it
    // serialises those host-wide), and a timer would wait on that.
    for (std::size_t k = 0; k < task.args.size(); ++k)
      if (task.args[k].is_buffer()) a.buf[k] = allocate(static_cast<std::size_t>(a.n[k]) * dtype_size(task.args[k].dtype));
    fill_inputs(task, c, a, seed, tag, dist);
    a.rebind();
    return a;
  }

  void fill_inputs(const Task& task, const w::Case& c, w::ArgSet& a, uint64_t seed, const std::string& tag,
                   const w::DistributionOverride& dist) override {
    fill_sets(task, c, a, nullptr, seed, tag, dist);
  }

  // fill_inputs into `a` and, where given, the same contents into `twin`
  // (allocated for the same case): each value drawn once.
  void fill_sets(const Task& task, const w::Case& c, w::ArgSet& a, w::ArgSet* twin, uint64_t seed,
                 const std::string& tag, const w::DistributionOverride& dist) {
    SharedSlot slot;
    for (std::size_t k = 0; k < task.args.size(); ++k) {
      const Arg& arg = task.args[k];
      if (!arg.is_buffer()) continue;
      const int64_t n = a.n[k];
      if (n == 0) continue;
      void* second = twin ? twin->buf[k].data() : nullptr;
      if (twin && twin->n[k] != n) throw std::logic_error("fill_sets: the two argument sets differ in size");
      if (!arg.is_input()) {
        fill_poison<<<grid_for(n), kThreads>>>(code(arg.dtype), a.buf[k].data(), second, n, dev_poison(poison()));
        continue;
      }
      const Distribution* over = dist ? dist(arg) : nullptr;
      const Distribution& d = over ? *over : arg.dist;
      // The stream's key under the judgement's secret (InputKey): the seed
      // alone does not give the inputs.
      const uint64_t key = input_key().stream(seed, w::input_stream(c, tag, arg));
      GenParams p{code(arg.dtype), static_cast<int>(d.kind), d.a, d.b, key};
      generate<<<grid_for(n), kThreads>>>(a.buf[k].data(), second, n, p);
    }
    finish("input generation");
  }

  w::ArgSet clone_for_call(const Task& task, const w::ArgSet& orig, bool poison_outputs) override {
    w::ArgSet a;
    a.sc = orig.sc;
    a.n = orig.n;
    a.buf.resize(orig.buf.size());
    for (std::size_t k = 0; k < orig.buf.size(); ++k)   // outside the slot, as in make_inputs
      if (orig.buf[k].data()) a.buf[k] = allocate(orig.buf[k].bytes());
    fill(task, a, orig, poison_outputs);
    a.rebind();
    return a;
  }

  void load(const Task& task, w::ArgSet& dst, const w::ArgSet& orig) override {
    fill(task, dst, orig, true);
    dst.sc = orig.sc;
    dst.rebind();
  }

  void copy(w::Buffer& dst, const w::Buffer& src) override {
    SharedSlot slot;
    check(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDeviceToDevice), "copying a buffer");
    finish("copies");
  }

  void zero(w::Buffer& b) override {
    SharedSlot slot;
    check(cudaMemsetAsync(b.data(), 0, b.bytes()), "zeroing a buffer");
    finish("zeroing");
  }

  void convert(DType dst_t, w::Buffer& dst, int64_t dst_n, DType src_t, const w::Buffer& src,
               int64_t src_n) override {
    if (dst_n <= 0 || src_n <= 0) return;
    SharedSlot slot;
    convert_wrapping<<<grid_for(dst_n), kThreads>>>(code(dst_t), dst.data(), dst_n, code(src_t), src.data(), src_n);
    finish("conversion");
  }

  std::size_t first_difference(const w::Buffer& a, const w::Buffer& b) override {
    const auto bytes = static_cast<int64_t>(a.bytes());
    if (bytes == 0) return 0;
    w::Buffer first = allocate(sizeof(unsigned long long));
    const auto none = static_cast<unsigned long long>(bytes);
    unsigned long long at = none;
    SharedSlot slot;
    check(cudaMemcpy(first.data(), &at, sizeof at, cudaMemcpyHostToDevice), "setting up the input check");
    first_diff<<<grid_for(bytes / 8), kThreads>>>(static_cast<const unsigned char*>(a.data()),
                                                   static_cast<const unsigned char*>(b.data()), bytes,
                                                   static_cast<unsigned long long*>(first.data()));
    finish("input check");
    check(cudaMemcpy(&at, first.data(), sizeof at, cudaMemcpyDeviceToHost), "reading the input check");
    return static_cast<std::size_t>(std::min(at, none));
  }

  std::vector<w::ComparePart> compare(DType t, const w::Buffer& want, const w::Buffer& got, int64_t n,
                                      const Tolerance& tol, bool against_reference) override {
    const auto blocks = static_cast<std::size_t>((n + kBlock - 1) / kBlock);
    std::vector<w::ComparePart> parts(blocks);
    if (blocks == 0) return parts;
    w::Buffer out = allocate(blocks * sizeof(Part));
    std::vector<Part> host(blocks);
    {
      SharedSlot slot;
      compare_blocks<<<static_cast<unsigned>(blocks), kCompareThreads>>>(code(t), want.data(), got.data(), n, tol.atol,
                                                                  tol.rtol, against_reference ? 1 : 0,
                                                                  dev_poison(poison()), static_cast<Part*>(out.data()));
      finish("comparison");
      check(cudaMemcpy(host.data(), out.data(), blocks * sizeof(Part), cudaMemcpyDeviceToHost),
            "reading the comparison");
    }
    for (std::size_t b = 0; b < blocks; ++b) {
      const Part& h = host[b];
      w::ComparePart& p = parts[b];
      p.diff2 = h.diff2;
      p.want2 = h.want2;
      p.diff2_scaled = h.diff2_scaled;
      p.want2_scaled = h.want2_scaled;
      p.max_abs = h.max_abs;
      p.compared = h.compared;
      p.bad = h.bad;
      p.worst = h.worst;
      p.why = static_cast<w::Why>(h.why);
    }
    return parts;
  }

  void fill(const Task& task, w::ArgSet& a, const w::ArgSet& orig, bool poison_outputs) {
    SharedSlot slot;
    for (std::size_t k = 0; k < orig.buf.size(); ++k) {
      if (!orig.buf[k].data()) continue;
      if (poison_outputs && task.args[k].role == Role::out) {
        if (a.n[k] > 0)
          fill_poison<<<grid_for(a.n[k]), kThreads>>>(code(task.args[k].dtype), a.buf[k].data(), nullptr, a.n[k],
                                                       dev_poison(poison()));
      } else {
        check(cudaMemcpyAsync(a.buf[k].data(), orig.buf[k].data(), orig.buf[k].bytes(), cudaMemcpyDeviceToDevice),
              "copying a buffer");
      }
    }
    finish("copies");
  }

  double element(DType t, const w::Buffer& b, int64_t i) override {
    const std::size_t es = dtype_size(t);
    unsigned char raw[8] = {};
    {
      SharedSlot slot;
      check(cudaMemcpy(raw, static_cast<const unsigned char*>(b.data()) + static_cast<std::size_t>(i) * es, es,
                       cudaMemcpyDeviceToHost),
            "reading an element");
    }
    switch (t) {
      case DType::f32: { float v; std::memcpy(&v, raw, 4); return v; }
      case DType::f64: { double v; std::memcpy(&v, raw, 8); return v; }
      case DType::i32: { std::int32_t v; std::memcpy(&v, raw, 4); return v; }
      case DType::i64: { std::int64_t v; std::memcpy(&v, raw, 8); return static_cast<double>(v); }
      case DType::bf16: { std::uint16_t v; std::memcpy(&v, raw, 2); return bf16_to_double(v); }
    }
    return 0.0;
  }
};

__global__ void empty_kernel() {}

}  // namespace

std::string finish_device_call() {
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t run = cudaDeviceSynchronize();
  try {
    check(launch, "after the call (a launch failed: too many threads or too much shared memory?)");
    check(run, "while the kernel ran (device-wide synchronize)");
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

std::string empty_round_trip() {
  empty_kernel<<<1, 1>>>();
  return finish_device_call();
}

std::string prime_round_trip() {
  // Its own non-blocking stream and only that stream's wait: work the
  // candidate's threads launch meanwhile (on any stream) is not waited for
  // here, outside the timed window, but by the timed call's device-wide
  // synchronize, inside it.
  static cudaStream_t s = [] {
    cudaStream_t made = nullptr;
    (void)cudaStreamCreateWithFlags(&made, cudaStreamNonBlocking);
    return made;
  }();
  if (!s) return "cannot create the prime's stream";
  empty_kernel<<<1, 1, 0, s>>>();
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t run = cudaStreamSynchronize(s);
  try {
    check(launch, "priming the host (launching an empty kernel)");
    check(run, "priming the host (its stream's synchronize)");
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

namespace {
DeviceSpace& the_device_space() {
  static DeviceSpace space;
  return space;
}
}  // namespace

w::Space& device_space() { return the_device_space(); }

void fill_inputs_twice(const Task& task, const w::Case& c, w::ArgSet& a, w::ArgSet& b, uint64_t seed,
                       const std::string& tag) {
  the_device_space().fill_sets(task, c, a, &b, seed, tag, {});
}

void load_device_space_kernels() {
  // Lazy loading would load each kernel's module at its first launch,
  // inside the slot; cudaFuncGetAttributes loads it now.
  cudaFuncAttributes attr;
  for (const void* f : {reinterpret_cast<const void*>(&generate), reinterpret_cast<const void*>(&fill_poison),
                        reinterpret_cast<const void*>(&convert_wrapping), reinterpret_cast<const void*>(&first_diff),
                        reinterpret_cast<const void*>(&compare_blocks),
                        reinterpret_cast<const void*>(&empty_kernel)})
    check(cudaFuncGetAttributes(&attr, f), "loading the protocol's kernels");
}

std::size_t pool_reserved_bytes() {
  int dev = 0;
  cudaMemPool_t pool = nullptr;
  std::uint64_t reserved = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, dev) != cudaSuccess ||
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess)
    return 0;
  return static_cast<std::size_t>(reserved);
}

w::Buffer allocate_device(std::size_t bytes) { return allocate(bytes); }

void reserve_protocol_memory(const Task& task, std::size_t extra_bytes) {
  // The largest shape's buffers, each rounded up as the pool would.
  constexpr std::size_t kAlign = std::size_t{2} << 20;
  std::vector<std::size_t> largest;
  std::size_t largest_total = 0;   // of `largest`, to compare shapes
  auto consider = [&](const std::vector<Shape>& shapes, bool hidden) {
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const w::ArgSet a =
          w::scalars_of(task, w::Case{&shapes[i], hidden ? w::Case::Kind::hidden : w::Case::Kind::visible, i});
      std::vector<std::size_t> sizes;
      std::size_t total = 0;
      for (std::size_t k = 0; k < task.args.size(); ++k) {
        if (!task.args[k].is_buffer()) continue;
        const std::size_t b = static_cast<std::size_t>(a.n[k]) * dtype_size(task.args[k].dtype);
        sizes.push_back((b + kAlign - 1) / kAlign * kAlign);
        total += sizes.back();
      }
      if (total > largest_total) {
        largest_total = total;
        largest = std::move(sizes);
      }
    }
  };
  consider(task.visible, false);
  consider(task.hidden, true);
  // The same allocations the protocol makes, so that the pool keeps blocks
  // of the sizes it will be asked for; plus one block for comparison
  // results and the input check's index.
  constexpr int kSets = 7;   // see device_space.hpp
  std::vector<w::Buffer> held;
  for (int set = 0; set < kSets; ++set)
    for (std::size_t b : largest) held.push_back(allocate(b));
  held.push_back(allocate(kAlign));
  if (extra_bytes > 0) held.push_back(allocate(extra_bytes));
  held.clear();
  check(cudaDeviceSynchronize(), "reserving the protocol's device memory");
}

void device_call(Entry entry, w::ArgSet& a) {
  // The call's kernels may overlap other workers' correctness work, never a
  // timing: they run inside the shared slot.
  SharedSlot slot;
  check(cudaDeviceSynchronize(), "before the call");
  entry(a.ptr.data());
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t run = cudaDeviceSynchronize();
  check(launch, "after the call (a launch failed: too many threads or too much shared memory?)");
  check(run, "while the kernel ran (device-wide synchronize)");
}

}  // namespace kevo::cuda::worker
