// The GPU half of kevo-cuda-worker: timing candidate against reference on
// inputs generated in GPU memory (device_space.hpp), with CUDA events, a
// device-wide synchronize, a host wall-clock cross-check, an L2 flush
// before every repeat and a roofline floor.
// Documented in docs/cuda.md.
#pragma once

#include "device_space.hpp"
#include "judge.hpp"
#include "profile.hpp"
#include "slot.hpp"

#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"
#include "kevo/cuda/probe_excess.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace kevo::cuda::worker {

namespace w = kevo::native::judge;

// "NVIDIA H200 0000:19:00.0 GPU-8f2c..." for the current device; its PCI
// bus id in `bus_id`.
std::string device_identity(std::string& bus_id);

struct GpuTiming {
  double peak_tflops = 67.0;
  double peak_tflops_bf16 = 989.0;   // dense bf16 tensor-core peak (tasks with bf16 inputs)
  double peak_gbps = 4800.0;
  double floor_fraction = 0.9;
  std::int64_t flush_bytes = 0;   // 0: 2 x the device's L2
  double fill_idle_seconds = 0.0; // more timing while no other worker waits for the GPU (backend.cuda)
  // backend.cuda.slot_hold "phase": the timing's preparation (inputs,
  // copies) and its final check each take the shared slot once, instead
  // of once per protocol step.
  bool phase_holds = false;
  // backend.cuda.null_recalibration "always" (the default): the median of
  // the host's null calls made again after every shape's timed calls may
  // replace the first where shorter, not only where the first came out
  // longer than the calls' lower quartile ("when_long"). The null calls
  // are made either way: they are the yardstick of the probe after a call.
  bool always_recalibrate = true;
  // backend.cuda.reset_persisting_l2: the L2's persisting lines reset
  // before every flush.
  bool reset_persisting_l2 = true;
  // backend.cuda.probe_tolerance_fraction: the part of the calls' median
  // round trip that the probe after a call may exceed its yardstick by
  // uncharged (beside the null probes' IQR and 10 us, the largest of the
  // three); an early answer can hide up to the tolerance a call, and more.
  double probe_tolerance_fraction = 0.02;
};

// The L2 flush before every timed call: a buffer of >= 2 x the L2 (from
// the pool with phase holds), written and waited for.
class L2Flush {
 public:
  explicit L2Flush(const GpuTiming& g);
  void run();

 private:
  w::Buffer pooled_;
  void* own_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int round_ = 0;
  bool reset_persisting_ = true;

 public:
  ~L2Flush();
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
};

// Where the timed loop's wall time went, summed over its candidate and
// reference pairs (the judge's clock): the fresh inputs of both sides, the
// two L2 flushes, the reference's call, the host's prime, the candidate's
// round trip, the judge's probe after it, the check of the timed outputs; the judge's first step after
// the candidate's call (a flush or the check) apart, since the GPU switches
// back from the host's context there. For the backend's statistics (the
// worker's phases "loop_*"), so that a benchmark can say what a pair costs.
struct TimingLoopCost {
  double inputs = 0, flush = 0, flush_after_call = 0, reference = 0, prime = 0, call = 0, probe = 0, check = 0,
         check_after_call = 0;
  std::int64_t pairs = 0;
  double warmup = 0;   // the exclusive hold before the timed pairs (the warm-up pairs included): "hold_warmup"
  // Seconds each exclusive hold waited, at its start, for GPU work already
  // running (another process's, or the host's own from its correctness
  // calls) before anything was timed: "hold_foreign_wait"; and the holds
  // where that work still ran at the limit: "hold_foreign_unfinished".
  double foreign_wait = 0;
  std::int64_t foreign_unfinished = 0;
  // Shapes whose null calls were made again after the timed calls, and of
  // those, the ones whose second median was the shorter one (taken off the
  // calls) and the ones whose second was longer (the first kept): counts,
  // "null_recalibrations", "null_second_shorter", "null_second_longer",
  // "null_retries" (rounds of null calls made again after a second median
  // still above the calls' lower quartile).
  std::int64_t recalibrations = 0, second_shorter = 0, second_longer = 0, null_retries = 0;
  // Timed calls charged for GPU work the host left running after its
  // answer (the judge's probe after the call beyond its probe after a null
  // call): "after_call_charged".
  std::int64_t after_call_charged = 0;
  // How far each timed call's probe came out beyond its yardstick (the
  // probe after a null call), counted in buckets: at most 2, 5, 10, 20 and
  // 50 us, and above ("probe_excess_le_2us" ... "probe_excess_above_50us",
  // kevo/cuda/probe_excess.hpp),
  // so that a benchmark can show what honest calls leave and so what the
  // tolerance must allow; and the microseconds charged in all
  // ("after_call_charged_us").
  std::int64_t excess_buckets[kProbeExcessBuckets] = {};
  double after_call_charged_us = 0;
  // Sums over the timed shapes of the host's null median that came off the
  // calls and of the calls' median round trip, in seconds ("null_taken",
  // "round_trip"): a benchmark's per-judgement figures (the difference of
  // its statistics before and after a judgement).
  double null_taken = 0, round_trip = 0;
  void add_to(nlohmann::json& phases) const;
};

// The probe made at every answer of the candidate's host, while its stop
// is delivered (HostSpec::on_answer): made() runs after_host_probe_ns and
// keeps its time or its error; take() returns the last one and forgets it
// (a CUDA error: std::runtime_error; none made since the last take:
// std::logic_error).
// `quiet_ns`: the threshold of the probes after the first
// (after_host_probe_ns), quiet_probe_threshold_ns() measured when the
// worker starts, before any candidate's process exists (no code of its can
// have held it up), and again in time_on_device's first exclusive hold (no
// other worker's GPU work can have): the lower of the two
// (`measured_in_hold` once the second is taken).
// `mode`: `single` (one probe a call) in the host's first calibration (its
// null calls, made under the shared slot beside other workers' GPU work);
// `until_quiet` in time_on_device's exclusive holds (the timed calls and
// the second calibration's null calls), where the probes are taken; `none`
// elsewhere. A correctness call makes none: its probe was never taken, and
// under the shared slot it is GPU work beside other workers' (it did not
// explain the correctness phase's length: 0.65-0.67 s a candidate with 8
// workers on an H100 with or without it, 2026-12-07; the host's second
// context is most of it, docs/cuda.md#not-done-yet).
struct AnswerProbe {
  double ns = -1.0;
  std::string error;
  double quiet_ns = 0.0;
  bool measured_in_hold = false;
  // none: no probe; single: one probe a call; until_quiet: probes until
  // one is quiet (after_host_probe_ns with `quiet_ns`).
  enum class Mode { none, single, until_quiet } mode = Mode::none;
  void made(std::chrono::steady_clock::time_point answered) noexcept;
  double take();
};

// The threshold of the judge's probes after the first: this context's
// empty round trip (the lower quartile of 16) plus twice that, clamped to
// 15-100 us.
double quiet_probe_threshold_ns();

// The host's first calibration (its null calls, made before the
// candidate's code was loaded): the median of their round trips, and the
// median and IQR of the judge's probe after each (probe median 0 = none).
struct FirstCalibration {
  double null_ns = 0.0;
  double probe_median_ns = 0.0;
  double probe_iqr_ns = 0.0;
};

// Times candidate and reference on every visible shape (fresh inputs from
// `seed` for every call) and fills the timing fields of `v`; a CUDA error,
// a wrong timed output or a time under the roofline floor settles `v`.
// The candidate runs in its kernel host (`cand`): its time is the judge's
// clock around the call (resume to answer, the host's device-wide
// synchronize inside) less `first.null_ns`, the median round trip of the
// host's calibration calls (made before its code was loaded; or of the
// same calls made again after the timed calls, where shorter), plus the
// GPU work the host left running after its answer: the judge's
// after_host_probe_ns() after the call beyond a yardstick, the shorter
// median of the same probe after the second calibration's null calls and
// `first.probe_median_ns` (after the first's, made before the candidate's
// code was loaded; 0: none), less a tolerance (whose spread term comes
// from the first calibration's probes too, where they were made: code
// loaded later could widen the second's). Between calls the host must
// be stopped: one found running resumed itself (a runtime_error). Before each
// of its timed calls the host is primed (Endpoint::prime: its context made
// the device's current one, as the judge's is before a reference call).
// The reference runs here, timed by the same clock around its launch and a
// device-wide synchronize, less this process's own empty round trip.
//
// Each shape's exclusive hold is released after its timed calls.
// Returns the per-shape timings.
nlohmann::json time_on_device(const Task& task, const w::Options& opt, std::uint64_t seed, const GpuTiming& g,
                              L2Flush& flush, w::Endpoint& cand, AnswerProbe& answer_probe,
                              const FirstCalibration& first, Entry ref, Verdict& v, TimingLoopCost& cost);

// The judge's empty round trip (an empty kernel and a device-wide
// synchronize of its own context) right after a call of the candidate's
// host: the switch back from the host's context, and any GPU work the host
// left running (the GPU time-slices between contexts). Nanoseconds on the
// judge's clock from the host's answer to the probe's end. Made at the
// answer, the host's SIGSTOP sent and not yet waited for (HostSpec::on_answer,
// AnswerProbe above), so that the stop's length is in neither the call's
// probe nor the yardstick (made after the stop and measured from the
// probe's start, an H100 charged 11.5 us of an axpy's 38 us answered
// early). Where `quiet_ns` > 0, more probes follow while each takes longer
// than that, until one does not or 5 s have passed since the answer (then
// std::runtime_error): the GPU time-slices between contexts, so the first
// probe waits for one slice of work the host left running, not for all of
// it; every probe held up counts. A CUDA error throws std::runtime_error.
double after_host_probe_ns(std::chrono::steady_clock::time_point answered, double quiet_ns = 0.0);

// At the start of an exclusive hold: the judge's probes until one takes no
// longer than `quiet_ns`, so that GPU work still running from before the
// hold (another worker's candidate's host that answered early and is
// stopped now, docs/verdicts.md#threat-model hole 4) shares the GPU with
// nothing timed in it; none where `quiet_ns` is 0. The wait is added to
// `cost.foreign_wait`, and a hold where the work still ran at 5 s to
// `cost.foreign_unfinished`; returns whether it did (the hold goes on; the
// caller says so). A CUDA error of the probe throws std::runtime_error.
bool wait_for_quiet_gpu(double quiet_ns, TimingLoopCost& cost);

// After the candidate's process has ended (inside the caller's exclusive
// hold): the reference timed alone on every visible shape (inputs from
// `seed`); where the interleaved timing (`shapes`, from time_on_device) saw
// it slower than alone by more than 5% (work the candidate's process left
// running beside it, for one), its time alone is used and the verdict's
// speedup and message say so. Returns whether it changed the verdict.
bool reference_alone(const Task& task, const w::Options& opt, std::uint64_t seed, L2Flush& flush, Entry ref,
                     nlohmann::json& shapes, Verdict& v);

// 2 x L2 of the current device, at least 64 MiB.
std::int64_t default_gpu_flush_bytes();

}  // namespace kevo::cuda::worker
