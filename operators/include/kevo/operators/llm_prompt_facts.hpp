// What the LLM prompts say beyond the task's own text, per backend: the
// hardware (a GPU's figures, or the CPU's model), the task's FLOP and byte
// counts with the roofline floor they imply, the libraries a candidate may
// call, and the compiler's register report of the parent kernel. These fill
// the `hardware`, `roofline` and `libraries` slots and part of `feedback`
// (docs/llm.md#prompts). Nothing here runs candidate code or touches a device:
// the GPU is known by the name the judge wrote into the parent's verdict.
#pragma once

#include "kevo/core/task.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kevo::operators::llm {

// One GPU model's figures, as its prompts state them.
struct GpuFacts {
  std::string name;                   // as cudaDeviceProp::name reports it: "NVIDIA H200"
  std::string compute_capability;     // "9.0"
  std::string arch;                   // nvcc's name of it: "sm_90"
  int sms = 0;
  double memory_gib = 0;
  double bandwidth_gbps = 0;          // DRAM, datasheet
  double l2_mib = 0;
  double l2_persisting_mib = 0;       // most that an access policy window can keep resident
  int smem_per_sm_kib = 0;
  int smem_per_block_optin_kib = 0;   // with cudaFuncAttributeMaxDynamicSharedMemorySize (48 without)
  int registers_per_sm = 65536;
  int threads_per_sm = 2048;
  int blocks_per_sm = 32;
  double fp32_tflops = 0;             // CUDA cores, no tensor cores
  double bf16_tflops = 0;             // dense, tensor cores
  std::string features;               // one clause on what this generation adds
};

// The GPUs whose figures kevo knows. The first, the H200 (read from the
// device with cudaGetDeviceProperties; the peaks are the datasheet's, the
// same as backend.cuda.roofline's defaults), is the default.
const std::vector<GpuFacts>& known_gpus();
// The known GPU a verdict's `device` names ("NVIDIA H200 0000:19:00.0
// GPU-8f..."; the name must be followed by the end or a space), or nullptr.
const GpuFacts* find_gpu(std::string_view device);

// Whether the prompts of a task of `backend` describe a GPU: the CUDA
// backend, and the torch backend whose candidates run on "cuda"
// (`torch_device` is backend.torch.device; "" stands for its default, "cuda").
bool gpu_prompts(const std::string& backend, std::string_view torch_device = "");

// The GPU whose figures the prompts of a task of `backend` state, for a
// parent judged on `device`: the known GPU it names; the H200 (the default)
// when it names none; nullptr for an unknown GPU and for backends whose
// prompts describe no GPU (gpu_prompts).
const GpuFacts* prompt_gpu(const std::string& backend, std::string_view device, std::string_view torch_device = "");

// The `hardware` slot for a task of `backend` whose parent was judged on
// `device` (the verdict's device; "" when it names none). cuda: the known
// GPU's figures; an unknown GPU by its name alone, saying that kevo has no
// figures for it; no name: the H200's, saying that they are assumed. torch:
// the same for "cuda" (`torch_device`), this machine's CPU for "cpu", each
// introduced by where the candidates run. Other backends: this machine's
// CPU model and thread count.
std::string hardware_text(const std::string& backend, const std::string& device, const std::string& torch_device = "");
std::string gpu_text(const GpuFacts& gpu);

// The `roofline` slot: per visible shape the task's FLOP and byte counts
// and, with `gpu`, the floor max(flops / peak, bytes / bandwidth) at its
// peaks (bf16 inputs: the tensor-core peak, as the CUDA judge uses); with a
// positive `parent_median_ns` (the parent's median summed over the visible
// shapes, as its verdict has it), how far above the floor the parent is.
// In two parts: what depends on the task and the GPU alone (the counts and
// floors per shape, and the floors' sum), made once per task
// (Service::task_texts); then the text with the parent's line.
struct RooflineCounts {
  std::string text;
  double floor_ns = 0.0;   // the floors summed over the visible shapes (0: no GPU, or no counts)
};
RooflineCounts roofline_counts(const Task& task, const GpuFacts* gpu);
std::string roofline_text(const RooflineCounts& counts, double parent_median_ns);

// The `libraries` slot: what a candidate of `task` may call beyond the C++
// standard library and its backend's runtime. A torch task: the kernel
// languages it accepts and which of the reference's own operations it
// still allows (torch.allow), or that it allows none.
std::string libraries_text(const Task& task);

// The `sizes` slot: the task's dimension names (a torch task: the reference
// module's size globals, which the judge sets for every shape).
std::string sizes_text(const Task& task);

// Registers, spills, stack and static shared memory per kernel from the
// `ptxas info` lines of a compile log (nvcc -Xptxas=-v), one line per kernel
// with demangled names; "" when the log has none (g++, or no kernel).
std::string register_report(const std::string& compile_log);

}  // namespace kevo::operators::llm
