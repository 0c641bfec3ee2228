// The CUDA backend: candidates are whole .cu translation units that define
// the task's host function (device pointers in, launches on any stream);
// nvcc builds each into a shared object in the CPU backend's compile stage
// (parallel, cached by source + flags + arch), and kevo-cuda-worker judges it
// on the GPU in a fresh process. Config keys: docs/cuda.md.
#pragma once

#include "kevo/core/backend.hpp"
#include "kevo/core/strict_json.hpp"
#include "kevo/cpu/cpu_backend.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace kevo::cuda {

// The CUDA defaults of the shared keys (nvcc, flags, limits, one timing slot).
cpu::CpuOptions cuda_base_defaults();

struct CudaOptions {
  cpu::CpuOptions base = cuda_base_defaults();   // compiler (nvcc), flags, jobs, limits, trials, timing, sandbox
  std::string arch = "sm_90";    // -arch for nvcc
  int device = 0;                // the GPU the worker uses (an ordinal among CUDA_VISIBLE_DEVICES)
  // Roofline floor: a time below max(flops / peak, bytes / bandwidth) times
  // floor_fraction is an error, not a speedup. H200 datasheet figures.
  double peak_tflops = 67.0;     // fp32 (TF32 is off)
  double peak_tflops_bf16 = 989.0;   // dense bf16 (tensor cores): tasks with bf16 inputs
  double peak_gbps = 4800.0;
  double floor_fraction = 0.9;
  double reverify_speedup = 10.0;   // speedups above this are re-verified (fresh seed) and flagged
  // A timing that has met its budget goes on, while no other worker waits
  // for the GPU (the slot would idle), for up to this many more seconds:
  // more repeats where they cost no one anything (0 = off).
  double fill_idle_seconds = 0.3;
  // Before every L2 flush of the timing the judge resets the L2's
  // persisting lines (cudaCtxResetPersistingL2Cache), so that lines a
  // candidate's access policy window set aside as persisting do not
  // outlive the flush (tests/cuda/adversarial/persists_in_l2.cu). Off
  // only to measure what the attack gains without it.
  bool reset_persisting_l2 = true;
  // CUDA_DEVICE_MAX_CONNECTIONS of every worker: the hardware work queues
  // a context opens. With one, a host creates about twice as many contexts
  // per second, and a fresh context per candidate is what bounds a host's
  // candidates per second (docs/cuda.md); kernels a candidate puts on
  // several streams then share one queue. 0 = not set (the CUDA default, 8).
  int max_connections = 1;
  // How a worker holds the GPU's slot shared for its correctness work:
  // "phase" = once per correctness pass, once for the timing's preparation
  // and once for its final check (the device memory pool is grown before,
  // so nothing inside asks the driver); "call" = once per protocol step
  // (each input generation, copy, call and comparison), so a worker that
  // meets a timing at every step waits out each one (docs/cuda.md).
  std::string slot_hold = "phase";
  // The candidate host's null calls, whose median comes off every timed
  // call, made again inside the exclusive hold after a shape's timed calls
  // and the shorter median of the two taken (the candidate's code, loaded
  // by then, can only lengthen the second): "always" after every shape
  // (16 more round trips of the hold), "when_long" only where the first
  // median is not under the calls' lower quartile (it cannot have been
  // right). On an H100 "always" caught first medians of 50 us and 1 ms
  // against 2.4 us and took the judgement-to-judgement CV from 0.32% to
  // 0.27% (docs/benchmarks.md#cuda-null-recalibration).
  std::string null_recalibration = "always";
  // The judge's probe after each timed call may exceed its yardstick (the
  // same probe after the host's null calls) by the largest of the null
  // probes' IQR, 10 us and this part of the calls' median round trip
  // before the excess is charged to the call: an honest call's probe also
  // comes out some microseconds long, and an answer given early can hide
  // up to the tolerance (docs/verdicts.md#threat-model). On an H100
  // (2026-12-07) honest axpy calls' probes came out 5-10 us beyond the
  // yardstick in half the pairs (at most 10 us in 75-87%), a 4.5 ms
  // sgemm's 10-20 us in a third and over 50 us in a sixth; with the floor
  // at 5 us, 0.02 charged 62-65% of honest axpy pairs and 0.1 25-29%. A
  // tenth of a long kernel is more than any honest excess seen: 0.02
  // with a 10 us floor (not yet run on a GPU).
  double probe_tolerance_fraction = 0.02;
  // The GPU's timing slot: lock files shared by every kevo worker on the
  // host, named after the GPU's PCI bus id ("" = no cross-process slot).
  std::string lock_dir = "/tmp";
  // Optional compute-sanitizer stage before the protocol ("" = off).
  std::string sanitizer;                  // "memcheck", "racecheck", "initcheck", "synccheck"
  std::string sanitizer_path = "compute-sanitizer";
  // ncu on every n-th timed candidate that turns out correct (0 = off).
  int profile_every = 0;
  // Also profile the candidates an operator asks for (the analyst, whose
  // parent had no profile); on only where ncu is found (the effective
  // config says false otherwise).
  bool profile_on_request = true;
  // The ncu child runs the candidate without the system-call policy or
  // Landlock (ncu's injected library needs calls the policy refuses): it
  // could read a task's hidden shapes and write the profile's text. So a
  // task with hidden shapes gets no profile unless this is true (candidates
  // trusted; docs/cuda.md#profiler-feedback).
  bool profile_unconfined = false;
  std::string profiler_path = "ncu";
  double tool_seconds = 120.0;            // wall-clock limit of one sanitizer or profiler run
};

CudaOptions parse_cuda_options(StrictObject& obj);
nlohmann::json to_json(const CudaOptions&);
// The CPU backend's options that realise these (nvcc command, worker,
// request fields); what make_cuda_backend builds on.
cpu::CpuOptions to_cpu_options(CudaOptions);
// Throws Failure when nvcc or the worker cannot be found.
std::unique_ptr<Backend> make_cuda_backend(CudaOptions);

}  // namespace kevo::cuda
