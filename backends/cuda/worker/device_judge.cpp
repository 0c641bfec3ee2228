#include "device_judge.hpp"

#include "device_space.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kevo::cuda::worker {

namespace {

using Clock = std::chrono::steady_clock;
using w::quantile;

void check(cudaError_t e, const std::string& when) {
  if (e == cudaSuccess) return;
  throw std::runtime_error(std::string("CUDA error ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") " +
                           when);
}

// One device allocation. Move-only; the destructor ignores errors (after a
// sticky error the context is gone and so is the memory).
class DevBuf {
 public:
  DevBuf() = default;
  explicit DevBuf(std::size_t bytes) : bytes_(bytes) {
    check(cudaMalloc(&p_, std::max<std::size_t>(bytes, 1)), "allocating " + std::to_string(bytes) + " device bytes");
  }
  ~DevBuf() {
    if (p_) (void)cudaFree(p_);
  }
  DevBuf(DevBuf&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DevBuf& operator=(DevBuf&& o) noexcept {
    if (this != &o) {
      if (p_) (void)cudaFree(p_);
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  void* get() const { return p_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

class Event {
 public:
  Event() { check(cudaEventCreate(&e_), "creating an event"); }
  ~Event() { (void)cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

std::string fmt(double v) { return format_number(v); }

}  // namespace

std::string device_identity(std::string& bus_id) {
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) return "unknown GPU";
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess) std::snprintf(bus, sizeof bus, "device-%d", dev);
  bus_id = bus;
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-");
  std::string u = uuid;
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    const auto b = static_cast<unsigned char>(p.uuid.bytes[i]);
    if (i == 4 || i == 6 || i == 8 || i == 10) u += '-';
    u += hex[b >> 4];
    u += hex[b & 15];
  }
  return std::string(p.name) + " " + bus_id + " " + u;
}

std::int64_t default_gpu_flush_bytes() {
  int dev = 0, l2 = 0;
  if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) == cudaSuccess &&
      l2 > 0)
    return std::max<std::int64_t>(2 * static_cast<std::int64_t>(l2), std::int64_t{64} << 20);
  return std::int64_t{256} << 20;
}

nlohmann::json time_on_device(const Task& task, const w::Options& opt, std::uint64_t seed, const GpuTiming& g,
                              Entry cand, Entry ref, Verdict& v) {
  nlohmann::json shapes = nlohmann::json::array();
  const std::int64_t flush_bytes = std::max(g.flush_bytes, default_gpu_flush_bytes());
  // With phase holds from the pool reserved at the start (a cudaMalloc
  // and cudaFree are driver calls that wait behind other workers' context
  // creation, and cudaFree synchronizes the device).
  DevBuf flush_own;
  w::Buffer flush_pooled;
  void* flush_ptr = nullptr;
  if (g.phase_holds) {
    flush_pooled = allocate_device(static_cast<std::size_t>(flush_bytes));
    flush_ptr = flush_pooled.data();
  } else {
    flush_own = DevBuf(static_cast<std::size_t>(flush_bytes));
    flush_ptr = flush_own.get();
  }
  const std::size_t flush_size = static_cast<std::size_t>(flush_bytes);
  Event flush_start, start, stop;
  std::size_t visible = task.visible.size();
  const double budget = opt.timing_options.budget_seconds / static_cast<double>(std::max<std::size_t>(visible, 1));
  const double fill_idle = g.fill_idle_seconds / static_cast<double>(std::max<std::size_t>(visible, 1));
  double log_ratio = 0.0;
  int min_reps = std::numeric_limits<int>::max();
  int flush_round = 0;
  v.cand_median_ns = v.ref_median_ns = v.cand_iqr_ns = v.ref_iqr_ns = 0.0;
  std::vector<std::string> notes;

  for (std::size_t i = 0; i < task.visible.size(); ++i) {
    const w::Case c{&task.visible[i], w::Case::Kind::visible, i};
    // Fresh input contents for every timed call, drawn on the device into
    // one staging set outside the event window, and both sides' outputs
    // re-poisoned before each call: no timed call sees inputs an earlier one
    // saw, so a result the candidate keeps from earlier calls (one or many)
    // is never the right one. Every timed output is compared with the
    // reference's for the same inputs (below). All of it in GPU memory
    // (separate allocations for candidate and reference).
    w::Space& space = device_space();
    // With phase holds, one shared hold for all of the preparation below
    // (each step's own hold nests in it); released before the exclusive one.
    std::optional<SharedSlot> preparing;
    if (g.phase_holds) preparing.emplace();
    w::ArgSet fresh = space.make_inputs(task, c, seed, "timing");
    w::ArgSet dc = space.clone_for_call(task, fresh, true), dr = space.clone_for_call(task, fresh, true);
    int calls = 0;
    preparing.reset();
    // From here to the end of the timed calls no other kevo work runs on
    // this GPU (every worker on the host honours the slot). Allocations were
    // made before it: the repeats reuse these buffers.
    std::optional<ExclusiveSlot> exclusive;
    exclusive.emplace();
    // New contents for `fresh`, both sides loaded (inputs, poisoned outputs).
    auto next_inputs = [&] {
      space.fill_inputs(task, c, fresh, seed, "timing" + std::to_string(calls++));
      space.load(task, dc, fresh);
      space.load(task, dr, fresh);
    };
    // The candidate's output of this repeat against the reference's.
    auto check_repeat = [&](const char* when) -> std::string {
      const std::string bad = w::first_mismatch(task, c, dr, dc, space);
      if (bad.empty()) return {};
      return "the output of " + std::string(when) + " " + std::to_string(calls) + " on shape " + c.label() +
             " is wrong (" + bad + "): results reused across calls, or work skipped while timed";
    };

    struct Series {
      std::vector<double> ev, host, host_net;   // events; host interval; host less the flush
    };
    Series sc, sr;
    auto run = [&](Entry e, w::ArgSet& d, Series& s, const char* who) {
      // The inputs are in place before anything of the call can run (a
      // kernel on a non-blocking stream does not wait for the copy).
      check(cudaDeviceSynchronize(), "before a timed call");
      // Evict the L2 (>= 2x its size) so every repeat starts cold. It is
      // the last thing queued before the call: while the GPU clears it, the
      // host records the start event and makes the call, so the event
      // window holds the call's GPU time and not the host's launch latency
      // (which, on an idle GPU, it would: microseconds, and jittery).
      check(cudaEventRecord(flush_start.get(), 0), "recording an event");
      check(cudaMemsetAsync(flush_ptr, (flush_round++) & 0xFF, flush_size), "flushing the L2");
      const auto t0 = Clock::now();
      check(cudaEventRecord(start.get(), 0), "recording an event");
      e(d.ptr.data());
      const cudaError_t launch = cudaGetLastError();
      check(cudaEventRecord(stop.get(), 0), "recording an event");
      // Device-wide: work the call left on other streams finishes before
      // the host clock stops.
      const cudaError_t run_err = cudaDeviceSynchronize();
      const auto t1 = Clock::now();
      check(launch, std::string("after a timed call of the ") + who);
      check(run_err, std::string("while a timed call of the ") + who + " ran");
      float ms = 0.0f, flush_ms = 0.0f;
      check(cudaEventElapsedTime(&ms, start.get(), stop.get()), "reading an event");
      check(cudaEventElapsedTime(&flush_ms, flush_start.get(), start.get()), "reading an event");
      s.ev.push_back(static_cast<double>(ms) * 1e6);
      // The host clock started with the flush still running. For the
      // cross-check its GPU time comes off (the few microseconds it ran
      // before t0 make that a slight underestimate; the check has a 20 us
      // margin); a call whose work escaped the default stream is timed by
      // the whole host interval, flush included: its work may have run
      // beside the flush, and its time must never come out flattered.
      const double host = std::chrono::duration<double, std::nano>(t1 - t0).count();
      s.host.push_back(host);
      s.host_net.push_back(std::max(0.0, host - static_cast<double>(flush_ms) * 1e6));
    };
    std::string wrong;
    for (int k = 0; k < opt.timing_options.warmup && wrong.empty(); ++k) {
      next_inputs();
      run(cand, dc, sc, "candidate");
      run(ref, dr, sr, "reference");
      wrong = check_repeat("warm-up call");
    }
    sc = {};
    sr = {};
    const auto t_start = Clock::now();
    double fill_until = -1.0;   // set when the budget's stop condition is first met
    for (int rep = 0; rep < std::max(opt.timing_options.max_repeats, 1); ++rep) {
      // Alternating order: drifts in clock or temperature hit both alike.
      if (!wrong.empty()) break;
      next_inputs();
      if (rep % 2 == 0) {
        run(ref, dr, sr, "reference");
        run(cand, dc, sc, "candidate");
      } else {
        run(cand, dc, sc, "candidate");
        run(ref, dr, sr, "reference");
      }
      wrong = check_repeat("timed call");
      const auto now = Clock::now();
      const double spent = std::chrono::duration<double>(now - t_start).count();
      const auto reps = static_cast<std::size_t>(rep + 1);
      if (reps >= static_cast<std::size_t>(opt.timing_options.min_repeats) && spent >= budget) {
        // Adaptive: stop once the median is stable (IQR within 5% of it)
        // or the budget is spent twice over; then go on only while no other
        // worker waits for this GPU (its slot would idle otherwise), up to
        // fill_idle more seconds.
        const double m = quantile(sc.ev, 0.5), iqr = quantile(sc.ev, 0.75) - quantile(sc.ev, 0.25);
        if (iqr <= 0.05 * m || spent >= 2 * budget) {
          if (fill_until < 0) fill_until = spent + fill_idle;
          if (spent >= fill_until || gpu_slot().others_waiting()) break;
        }
      }
      if (opt.wall_seconds > 0 && std::chrono::duration<double>(now - opt.started).count() > 0.6 * opt.wall_seconds)
        break;
    }
    check(cudaDeviceSynchronize(), "after the timed calls");
    exclusive.reset();
    if (!wrong.empty()) {
      v.status = Status::wrong_answer;
      v.stage = Stage::timing;
      v.message = wrong;
      return shapes;
    }
    // Host wall-clock cross-check: events on the legacy stream miss work on
    // non-blocking streams; then the host times (which include the device
    // synchronize) are the honest ones.
    auto pick = [&](Series& s, const char* who) -> std::vector<double>& {
      const double me = quantile(s.ev, 0.5), mh = quantile(s.host_net, 0.5);
      if (mh > 1.5 * me + 20000.0) {
        notes.push_back(std::string(who) + " timed by host wall clock, L2 flush included (events " + fmt(me / 1e3) +
                        " us, host " + fmt(mh / 1e3) + " us: work outside the default stream)");
        return s.host;
      }
      return s.ev;
    };
    const std::vector<double>& tc = pick(sc, "candidate");
    const std::vector<double>& tr = pick(sr, "reference");
    const double cm = quantile(tc, 0.5), rm = quantile(tr, 0.5);
    const double ciqr = quantile(tc, 0.75) - quantile(tc, 0.25), riqr = quantile(tr, 0.75) - quantile(tr, 0.25);

    // Roofline floor from the task's counts.
    double floor_ns = 0.0;
    const Env env = c.shape->env();
    // bf16 inputs may run on tensor cores: their peak, not the fp32 one.
    bool bf16 = false;
    for (const auto& a : task.args) bf16 = bf16 || (a.is_buffer() && a.dtype == DType::bf16);
    const double peak = bf16 ? g.peak_tflops_bf16 : g.peak_tflops;
    if (!task.flops.empty()) floor_ns = std::max(floor_ns, task.flops.eval(env).as_double() / (peak * 1e3));
    if (!task.bytes.empty()) floor_ns = std::max(floor_ns, task.bytes.eval(env).as_double() / g.peak_gbps);
    shapes.push_back({{"shape", c.label()},
                      {"cand_median_ns", cm},
                      {"cand_iqr_ns", ciqr},
                      {"ref_median_ns", rm},
                      {"ref_iqr_ns", riqr},
                      {"cand_host_median_ns", quantile(sc.host_net, 0.5)},
                      {"roofline_floor_ns", floor_ns},
                      {"repeats", tc.size()},
                      {"speedup", rm / std::max(cm, 1.0)}});
    if (floor_ns > 0 && cm < g.floor_fraction * floor_ns) {
      v.status = Status::runtime_error;
      v.stage = Stage::timing;
      v.message = "timed at " + fmt(cm / 1e3) + " us on shape " + c.label() + ", under the roofline floor of " +
                  fmt(floor_ns / 1e3) + " us (flops / peak, bytes / bandwidth): an error, not a speedup";
      return shapes;
    }
    v.cand_median_ns += cm;
    v.ref_median_ns += rm;
    v.cand_iqr_ns += ciqr;
    v.ref_iqr_ns += riqr;
    log_ratio += std::log(std::max(rm / std::max(cm, 1.0), 1e-12));
    min_reps = std::min(min_reps, static_cast<int>(tc.size()));
  }
  const std::size_t n = task.visible.size();
  v.repeats = n ? min_reps : 0;
  v.speedup = n ? std::exp(log_ratio / static_cast<double>(n)) : 0.0;
  std::string m = "correct; speedup " + fmt(v.speedup) + "x (" + fmt(v.cand_median_ns / 1e3) + " us vs reference " +
                  fmt(v.ref_median_ns / 1e3) + " us)";
  for (const auto& s : notes) m += "; " + s;
  v.message = m;
  return shapes;
}

}  // namespace kevo::cuda::worker
