#include "kevo/cuda/cuda_backend.hpp"

#include <algorithm>
#include <thread>
#include <utility>

namespace kevo::cuda {

cpu::CpuOptions cuda_base_defaults() {
  cpu::CpuOptions o;
  o.flavour.name = "cuda";
  o.flavour.source_file = "candidate.cu";
  // The candidate and the reference share the one CUDA runtime the worker
  // loads (-cudart shared): device pointers and the primary context are
  // common to all three.
  o.flavour.link_flags = {"-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", "-Xlinker", "-z,defs"};
  o.flavour.worker_name = "kevo-cuda-worker";
  o.flavour.accelerator = true;
  // TF32 off for cuBLAS/cuDNN in candidates and references alike.
  o.flavour.worker_env = {"NVIDIA_TF32_OVERRIDE=0"};
  o.flavour.worker_env_pass = {"CUDA_VISIBLE_DEVICES", "CUDA_HOME"};
  o.compiler = KEVO_NVCC;
  o.flags = {"-O3", "-std=c++17", "-lineinfo"};
  // Every GPU context reserves far more address space than any RLIMIT_AS
  // would allow: the device memory is the limit, not the worker's.
  o.limits.memory_mb = 0;
  o.limits.wall_seconds = 60.0;
  o.limits.compile_memory_mb = 8192;
  o.limits.processes = 4096;   // the driver starts threads
  o.limits.open_files = 1024;  // the driver opens device files as it goes
  o.seccomp = false;           // the driver's ioctl/mmap traffic is outside the CPU policy (docs/cuda.md)
  o.eval_jobs = 1;             // one timing slot per GPU
  o.timing.min_repeats = 10;
  o.timing.max_repeats = 200;
  o.timing.budget_seconds = 0.3;
  return o;
}

CudaOptions parse_cuda_options(StrictObject& obj) {
  CudaOptions o;
  o.arch = obj.string("arch", o.arch);
  if (o.arch.rfind("sm_", 0) != 0 && o.arch.rfind("compute_", 0) != 0)
    obj.fail("arch", "an nvcc architecture such as \"sm_90\" or \"sm_90a\"");
  o.device = static_cast<int>(obj.integer("device", o.device, 0, 1023));
  if (auto r = obj.optional_object("roofline")) {
    o.peak_tflops = r->number("peak_tflops", o.peak_tflops, 1e-3, 1e6);
    o.peak_gbps = r->number("peak_gbps", o.peak_gbps, 1e-3, 1e9);
    o.floor_fraction = r->number("floor_fraction", o.floor_fraction, 0, 1);
    r->finish();
  }
  o.reverify_speedup = obj.number("reverify_speedup", o.reverify_speedup, 1, 1e9);
  o.base = cpu::parse_cpu_options(obj, cuda_base_defaults());
  return o;
}

nlohmann::json to_json(const CudaOptions& o) {
  nlohmann::json j = cpu::to_json(o.base);
  j["arch"] = o.arch;
  j["device"] = o.device;
  j["roofline"] = {{"peak_tflops", o.peak_tflops}, {"peak_gbps", o.peak_gbps}, {"floor_fraction", o.floor_fraction}};
  j["reverify_speedup"] = o.reverify_speedup;
  return j;
}

cpu::CpuOptions to_cpu_options(CudaOptions o) {
  cpu::CpuOptions b = std::move(o.base);
  // The architecture is a compile flag (and so part of the cache key).
  b.flags.push_back("-arch=" + o.arch);
  b.flavour.worker_request = {{"device", o.device},
                              {"peak_tflops", o.peak_tflops},
                              {"peak_gbps", o.peak_gbps},
                              {"floor_fraction", o.floor_fraction},
                              {"reverify_speedup", o.reverify_speedup}};
  return b;
}

std::unique_ptr<Backend> make_cuda_backend(CudaOptions o) {
  return std::make_unique<cpu::CpuBackend>(to_cpu_options(std::move(o)));
}

}  // namespace kevo::cuda
