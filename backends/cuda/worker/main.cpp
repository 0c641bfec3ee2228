// kevo-cuda-worker: judges one CUDA candidate in a fresh process, so that a
// corrupted CUDA context dies with it. Started by the CUDA backend inside the
// sandbox runner (own process group, wall-clock kill, scratch dir). It runs
// the shared correctness protocol (kevo_worker_judge: fresh seeded inputs per
// trial, NaN-poisoned outputs, input hashing, repeat consistency, hidden
// shapes) with every call executed on the GPU, then times the candidate
// against the reference on the GPU. See docs/cuda.md.
#include "device_judge.hpp"
#include "judge.hpp"
#include "worker_io.hpp"

#include "kevo/core/task.hpp"
#include "kevo/core/verdict.hpp"
#include "kevo/cpu/protocol.hpp"

#include <cuda_runtime.h>

#include <cfenv>
#include <chrono>
#include <cstdlib>
#include <string>

namespace {

namespace proto = kevo::cpu::protocol;
namespace w = kevo::cpu::worker;
namespace cw = kevo::cuda::worker;

// The seed of the re-verification of a suspiciously large speedup: inputs
// the first verdict never saw.
constexpr std::uint64_t kReverifySalt = 0x9E3779B97F4A7C15ULL;

}  // namespace

int main(int argc, char** argv) {
  const auto started = std::chrono::steady_clock::now();
  w::set_program_name("kevo-cuda-worker");
  int request_fd = -1, result_fd = -1;
  if (!w::parse_fds(argc, argv, request_fd, result_fd, "The evaluation worker of kevo's CUDA backend")) return 2;
  const nlohmann::json req = w::open_channel(request_fd, result_fd);
  w::Request r;
  int device = 0;
  cw::GpuTiming gt;
  double reverify_speedup = 10.0;
  try {
    r = w::parse_request(req, started);
    device = req.value("device", 0);
    gt.peak_tflops = req.value("peak_tflops", gt.peak_tflops);
    gt.peak_gbps = req.value("peak_gbps", gt.peak_gbps);
    gt.floor_fraction = req.value("floor_fraction", gt.floor_fraction);
    gt.flush_bytes = r.opt.flush_bytes;
    reverify_speedup = req.value("reverify_speedup", reverify_speedup);
  } catch (const std::exception& e) {
    w::fatal("bad_request", std::string("bad request: ") + e.what());
  }
  w::Options opt = r.opt;
  const bool gpu_timing = opt.timing && opt.mode == proto::kModeJudge;
  opt.timing = false;   // the shared judge checks correctness only; timing is ours

  kevo::Task task;
  try {
    task = kevo::load_task(r.task_dir);
  } catch (const std::exception& e) {
    w::fatal("task_load", e.what());
  }

  // TF32 off for library calls (the backend also sets NVIDIA_TF32_OVERRIDE=0).
  ::setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  // The context exists before any candidate code runs.
  {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
      w::fatal("no_gpu", std::string("no usable CUDA device: ") +
                             (e != cudaSuccess ? cudaGetErrorString(e) : "none visible"));
    if (device >= count) w::fatal("no_gpu", "device " + std::to_string(device) + " of " + std::to_string(count));
    if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaFree(nullptr)) != cudaSuccess)
      w::fatal("no_gpu", std::string("cannot create a CUDA context: ") + cudaGetErrorString(e));
  }

  const w::Libraries lib = w::load_libraries(r);
  const w::Entry ref = lib.reference, cand_entry = lib.candidate;
  const w::Reference reference = [ref](w::ArgSet& a) { cw::call_on_device(ref, a); };
  w::Kernel cand;
  if (opt.mode == proto::kModeNull) {
    cand = w::null_kernel(opt.null_kind, task, reference, opt.seed);
  } else {
    cand = [cand_entry](w::ArgSet& a, const w::Case&) { cw::call_on_device(cand_entry, a); };
  }
  std::fenv_t env;
  std::fegetenv(&env);

  try {
    nlohmann::json result = w::Judge(task, opt, reference, cand, env, env).run();
    kevo::Verdict v = kevo::verdict_from_json(result.at("verdict"));
    if (v.is_correct() && gpu_timing) {
      try {
        result["shape_timings"] = cw::time_on_device(task, opt, opt.seed, gt, cand_entry, ref, v);
        if (v.is_correct() && v.speedup > reverify_speedup) {
          // Too good to take on trust: judge again on inputs from another
          // seed and time again; the verdict says it was flagged.
          const double first = v.speedup;
          w::Options again = opt;
          again.seed = opt.seed ^ kReverifySalt;
          nlohmann::json second = w::Judge(task, again, reference, cand, env, env).run();
          kevo::Verdict v2 = kevo::verdict_from_json(second.at("verdict"));
          if (!v2.is_correct()) {
            v2.message = "re-verification of a " + std::to_string(first) + "x speedup failed: " + v2.message;
            result = second;
            v = v2;
          } else {
            result["shape_timings"] = cw::time_on_device(task, again, again.seed, gt, cand_entry, ref, v);
            if (v.is_correct())
              v.message += "; flagged: speedup above " + std::to_string(reverify_speedup) +
                           "x, re-verified on fresh inputs and re-timed";
          }
        }
      } catch (const std::exception& e) {
        v.status = kevo::Status::runtime_error;
        v.stage = kevo::Stage::timing;
        v.message = std::string("during timing: ") + e.what();
      }
      if (v.is_correct()) v.stage = kevo::Stage::done;
    }
    result["verdict"] = kevo::to_json(v);
    result["worker_ns"] = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count();
    w::emit(result);
  } catch (const std::bad_alloc&) {
    w::fatal("worker_memory", "the worker could not allocate the task's buffers");
  } catch (const std::exception& e) {
    w::fatal("internal", e.what());
  }
  w::finish(0);
}
