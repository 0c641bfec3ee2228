#include "kevo/operators/llm_prompt_facts.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string_view>
#include <thread>

namespace kevo::operators::llm {

const std::vector<GpuFacts>& known_gpus() {
  // H200: every figure but the peaks as cudaGetDeviceProperties reported it
  // on the H200 machine (memory 143771 MiB, L2 62914560 bytes, persisting L2
  // at most 39321600, shared memory 233472 per SM and 232448 per block
  // opted in; HBM 3201 MHz x 6016 bits x 2 = 4.8 TB/s). The others are
  // datasheet figures (SXM parts), not measured here.
  static const std::vector<GpuFacts> gpus = {
      {"NVIDIA H200", "9.0", "sm_90", 132, 140, 4800, 60, 37.5, 228, 227, 65536, 2048, 32, 67, 989,
       "Hopper: tensor cores through wmma, mma.sync and wgmma (wgmma needs sm_90a), TMA bulk copies, "
       "thread-block clusters"},
      {"NVIDIA H100 80GB HBM3", "9.0", "sm_90", 132, 80, 3350, 50, 0, 228, 227, 65536, 2048, 32, 67, 989,
       "Hopper: tensor cores through wmma, mma.sync and wgmma (wgmma needs sm_90a), TMA bulk copies, "
       "thread-block clusters"},
      {"NVIDIA A100-SXM4-80GB", "8.0", "sm_80", 108, 80, 2039, 40, 0, 164, 163, 65536, 2048, 32, 19.5, 312,
       "Ampere: tensor cores through wmma and mma.sync, cp.async"},
  };
  return gpus;
}

const GpuFacts* find_gpu(std::string_view device) {
  for (const auto& g : known_gpus())
    if (device.substr(0, g.name.size()) == g.name && (device.size() == g.name.size() || device[g.name.size()] == ' '))
      return &g;
  return nullptr;
}

bool gpu_prompts(const std::string& backend, std::string_view torch_device) {
  return backend == "cuda" || (backend == "torch" && torch_device != "cpu");
}

const GpuFacts* prompt_gpu(const std::string& backend, std::string_view device, std::string_view torch_device) {
  if (!gpu_prompts(backend, torch_device)) return nullptr;
  return device.empty() ? &known_gpus().front() : find_gpu(device);
}

std::string gpu_text(const GpuFacts& g) {
  std::string l2 = fmt::format("{:g} MiB of L2", g.l2_mib);
  if (g.l2_persisting_mib > 0)
    l2 += fmt::format(" (up to {:g} MiB of it can be set aside for persisting accesses)", g.l2_persisting_mib);
  return fmt::format(
      "{} (compute capability {}, {}; {}): {} SMs; {:g} GiB of HBM at about {:g} GB/s; {}; shared memory {} KiB "
      "per SM, 48 KiB per block by default and up to {} KiB per block after cudaFuncSetAttribute(kernel, "
      "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes); {} 32-bit registers per SM (at most 255 per thread), "
      "at most {} threads and {} blocks per SM; peak about {:g} TFLOP/s fp32 on CUDA cores and {:g} TFLOP/s dense "
      "bf16 on tensor cores",
      g.name, g.compute_capability, g.arch, g.features, g.sms, g.memory_gib, g.bandwidth_gbps, l2, g.smem_per_sm_kib,
      g.smem_per_block_optin_kib, g.registers_per_sm, g.threads_per_sm, g.blocks_per_sm, g.fp32_tflops, g.bf16_tflops);
}

namespace {

std::string cpu_text() {
  std::string model = "unknown CPU";
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return fmt::format("{} with {} hardware threads", model, std::thread::hardware_concurrency());
}

// The GPU name at the start of a verdict's device ("NVIDIA H200 0000:19:00.0
// GPU-..."): everything before the PCI bus id.
std::string device_name(const std::string& device) {
  static const std::regex bus(" [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-9A-Fa-f]");
  std::smatch m;
  if (std::regex_search(device, m, bus)) return device.substr(0, static_cast<std::size_t>(m.position(0)));
  return device;
}

std::string time_text(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  return fmt::format("{:.2f} us", ns / 1e3);
}

}  // namespace

std::string hardware_text(const std::string& backend, const std::string& device, const std::string& torch_device) {
  if (backend == "torch" && !gpu_prompts(backend, torch_device))
    return "the CPU (backend.torch.device \"cpu\"): " + cpu_text() +
           "; candidates run there: their kernels are C++ through load_inline's cpp_sources (no CUDA, no Triton)";
  if (!gpu_prompts(backend, torch_device)) return cpu_text();
  const std::string where = backend == "torch" ? "one GPU (backend.torch.device \"cuda\"): " : "";
  const GpuFacts* g = prompt_gpu(backend, device, torch_device);
  if (!g)
    return where + fmt::format("{} (the GPU that judged the current kernel; kevo has no figures for this model, and a "
                               "kernel may read them at run time with cudaDeviceGetAttribute)",
                               device_name(device));
  return where + (device.empty() ? "assumed (no GPU named in the verdict; kevo's default): " : "") + gpu_text(*g);
}

RooflineCounts roofline_counts(const Task& task, const GpuFacts* gpu) {
  if (task.flops.empty() && task.bytes.empty()) return {"(the task gives no FLOP or byte counts)", 0.0};
  bool bf16 = false;   // bf16 inputs may run on tensor cores: their peak, as the CUDA judge uses
  for (const auto& a : task.args) bf16 = bf16 || (a.is_buffer() && a.dtype == DType::bf16);
  const double tflops = gpu ? (bf16 ? gpu->bf16_tflops : gpu->fp32_tflops) : 0.0;
  std::string s = fmt::format("Counts per call (flops: {}; bytes: {}):\n", task.flops.empty() ? "-" : task.flops.text(),
                              task.bytes.empty() ? "-" : task.bytes.text());
  double floor_sum = 0.0;
  for (const auto& shape : task.visible) {
    double flops = 0.0, bytes = 0.0;
    try {
      const Env env = shape.env();
      if (!task.flops.empty()) flops = task.flops.eval(env).as_double();
      if (!task.bytes.empty()) bytes = task.bytes.eval(env).as_double();
    } catch (const std::exception&) {
      continue;   // a count that does not evaluate at this shape says nothing
    }
    s += fmt::format("- {}: {:.4g} FLOP, {:.4g} bytes", shape.label, flops, bytes);
    if (flops > 0 && bytes > 0) s += fmt::format(" ({:.3g} FLOP per byte)", flops / bytes);
    if (gpu) {
      const double compute_ns = flops / (tflops * 1e3), memory_ns = bytes / gpu->bandwidth_gbps;
      const double floor_ns = std::max(compute_ns, memory_ns);
      floor_sum += floor_ns;
      s += fmt::format("; floor max({}, {}) = {} at {:g} TFLOP/s {} and {:g} GB/s: {}-bound", time_text(compute_ns),
                       time_text(memory_ns), time_text(floor_ns), tflops, bf16 ? "bf16 (tensor cores)" : "fp32",
                       gpu->bandwidth_gbps, compute_ns > memory_ns ? "compute" : "memory");
    }
    s += "\n";
  }
  return {std::move(s), floor_sum};
}

std::string roofline_text(const RooflineCounts& counts, double parent_median_ns) {
  if (counts.floor_ns <= 0 || parent_median_ns <= 0) return counts.text;
  return counts.text + fmt::format("The current kernel's median time, {} over these shapes, is {:.2f}x the floor.\n",
                                   time_text(parent_median_ns), parent_median_ns / counts.floor_ns);
}

namespace {

std::string torch_libraries_text(const TorchTaskInfo& info) {
  std::string langs;
  for (const auto& l : info.languages) {
    const std::string what = l == "cuda"     ? "CUDA through load_inline (cuda_sources, with the binding in cpp_sources)"
                             : l == "triton" ? "Triton (not runnable under kevo's sandbox yet: prefer CUDA)"
                             : l == "cpp"    ? "C++ through load_inline (cpp_sources)"
                                             : l;
    langs += (langs.empty() ? "" : "; ") + what;
  }
  if (langs.empty()) langs = "CUDA through load_inline; Triton (not runnable under kevo's sandbox yet: prefer CUDA)";
  std::string s = "kernels in " + langs +
                  "; C++ through load_inline's cpp_sources on the CPU; torch itself for memory and views (torch.empty, "
                  "empty_like, zeros, view, reshape, contiguous, transpose, permute, expand, slicing). ";
  if (!info.forbid_reference_ops) return s + "This task does not forbid the reference's own operations.";
  if (info.allow.empty())
    return s + "Of the reference's own compute operations, none: every one its forward calls must be replaced by "
               "your kernels (calling one, e.g. the same torch function, is judged forbidden, naming it).";
  std::string allow;
  for (const auto& a : info.allow) allow += (allow.empty() ? "" : ", ") + a;
  return s + "Of the reference's own compute operations, only " + allow +
         " (e.g. keep the matrix product in cuBLAS and fuse what follows it into your kernel); calling any other "
         "one of them is judged forbidden, naming it.";
}

}  // namespace

std::string sizes_text(const Task& task) {
  std::string s;
  for (const auto& d : task.dims) s += (s.empty() ? "" : ", ") + d;
  if (s.empty()) return task.is_torch() ? "(none: the reference module has no size globals; one shape)" : "(none)";
  if (task.is_torch()) s += " (globals of the reference module; the judge sets them for every shape before "
                            "get_init_inputs() and get_inputs() run, so read sizes from the inputs' shapes)";
  return s;
}

std::string libraries_text(const Task& task) {
  if (task.is_torch()) return torch_libraries_text(*task.torch);
  const auto runtime = runtime_libraries(task.backend);
  std::string extra;
  for (const auto& name : task.libraries) {
    if (std::find(runtime.begin(), runtime.end(), name) != runtime.end()) continue;
    std::string what;
    for (const auto& info : known_libraries())
      if (info.name == name) what = info.what;
    extra += (extra.empty() ? "" : ", ") + name + (what.empty() ? "" : " (" + what + ")");
  }
  if (!extra.empty()) return "the runtime and " + extra;
  if (task.backend == "cuda")
    return "none beyond the CUDA runtime: no cuBLAS, cuBLASLt, CUB, Thrust or other CUDA library (the candidate is "
           "linked without them, and a call to one is judged forbidden)";
  std::string list;
  for (const auto& name : runtime) list += (list.empty() ? "" : ", ") + name;
  return "none beyond the runtime (" + list + ")";
}

namespace {

// "void gemm<64, 64>(float const*, int)" for "_Z4gemmILi64ELi64EEvPKfi",
// without the return type and the parameters: "gemm<64, 64>".
std::string kernel_name(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !d) return mangled;
  std::string s = d.get();
  int depth = 0;
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '<') ++depth;
    if (s[k] == '>') --depth;
    if (s[k] == '(' && depth == 0) {
      s.resize(k);
      break;
    }
  }
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  return s;
}

}  // namespace

namespace {

// The compile log's lines are the candidate's to write too (`#pragma
// message`, up to the log's 16 KB cap), so they are read by plain scans:
// std::regex recursed once per character of a long run (a 16 KB line of
// digits overflowed a 4 MB stack) and std::stol threw on a number too long
// for a long (a red team's finding; it ended the run).

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// A run of digits as a count, saturated at the largest long.
long count_of(std::string_view v) {
  long out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  (void)end;
  return ec == std::errc::result_out_of_range ? std::numeric_limits<long>::max() : out;
}

// The text after the first `marker` in `line` up to (not with) `stop`, or
// nullopt when there is none or it would be empty.
std::optional<std::string_view> after(std::string_view line, std::string_view marker, char stop) {
  const std::size_t at = line.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  const std::size_t b = at + marker.size();
  const std::size_t e = line.find(stop, b);
  if (e == std::string_view::npos || e == b) return std::nullopt;
  return line.substr(b, e - b);
}

// The digits right before position `pos` of `line` (empty: none).
std::string_view digits_before(std::string_view line, std::size_t pos) {
  std::size_t b = pos;
  while (b > 0 && is_digit(line[b - 1])) --b;
  return line.substr(b, pos - b);
}

// The digits at `pos`, followed by `tail`; nullopt when they are not.
std::optional<std::string_view> digits_then(std::string_view line, std::size_t pos, std::string_view tail) {
  std::size_t e = pos;
  while (e < line.size() && is_digit(line[e])) ++e;
  if (e == pos || line.substr(e, tail.size()) != tail) return std::nullopt;
  return line.substr(pos, e - pos);
}

// "N bytes stack frame, N bytes spill stores, N bytes spill loads": the
// first place in the line where all three follow one another.
std::optional<std::array<long, 3>> frame_of(std::string_view line) {
  static constexpr std::string_view k1 = " bytes stack frame, ", k2 = " bytes spill stores, ",
                                    k3 = " bytes spill loads";
  for (std::size_t at = line.find(k1); at != std::string_view::npos; at = line.find(k1, at + 1)) {
    const std::string_view a = digits_before(line, at);
    if (a.empty()) continue;
    const auto b = digits_then(line, at + k1.size(), k2);
    if (!b) continue;
    const auto c = digits_then(line, at + k1.size() + b->size() + k2.size(), k3);
    if (!c) continue;
    return std::array<long, 3>{count_of(a), count_of(*b), count_of(*c)};
  }
  return std::nullopt;
}

// The count at the first `marker` in `line` that has digits right before it
// (`tail` empty) or right after it, followed by `tail`.
std::optional<long> count_at(std::string_view line, std::string_view marker, std::string_view tail) {
  for (std::size_t at = line.find(marker); at != std::string_view::npos; at = line.find(marker, at + 1)) {
    if (tail.empty()) {
      if (const std::string_view n = digits_before(line, at); !n.empty()) return count_of(n);
    } else if (const auto n = digits_then(line, at + marker.size(), tail)) {
      return count_of(*n);
    }
  }
  return std::nullopt;
}

// "Used N registers": N.
std::optional<long> registers_of(std::string_view line) { return count_at(line, "Used ", " registers"); }

// "N bytes smem": N.
std::optional<long> smem_of(std::string_view line) { return count_at(line, " bytes smem", ""); }

}  // namespace

std::string register_report(const std::string& compile_log) {
  struct Kernel {
    long registers = -1, stack = 0, spill_stores = 0, spill_loads = 0, smem = 0;
  };
  if (compile_log.empty()) return {};   // g++ and a cached compile say nothing
  std::vector<std::string> order;
  std::map<std::string, Kernel> kernels, functions;
  std::string current, described;
  std::string_view rest = compile_log;
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (const auto name = after(line, "Compiling entry function '", '\'')) {
      current = std::string(*name);
      if (!kernels.count(current)) order.push_back(current);
      kernels[current];
    } else if (const std::size_t at = line.find("Function properties for ");
               at != std::string_view::npos && at + 24 < line.size() && !is_space(line[at + 24])) {
      std::size_t e = at + 24;
      while (e < line.size() && !is_space(line[e])) ++e;
      described = std::string(line.substr(at + 24, e - at - 24));
    } else if (const auto f = frame_of(line)) {
      Kernel& k = functions[described];
      k.stack = (*f)[0];
      k.spill_stores = (*f)[1];
      k.spill_loads = (*f)[2];
    } else if (!current.empty()) {
      if (const auto r = registers_of(line)) {
        kernels[current].registers = *r;
        if (const auto m = smem_of(line)) kernels[current].smem = *m;
      }
    }
  }
  std::string out;
  for (const auto& name : order) {
    const Kernel& k = kernels[name];
    if (k.registers < 0) continue;
    const Kernel f = functions.count(name) ? functions[name] : Kernel{};
    out += fmt::format("- {}: {} registers", kernel_name(name), k.registers);
    if (f.spill_stores || f.spill_loads)
      out += fmt::format(", SPILLS: {} bytes stored and {} bytes loaded to local memory", f.spill_stores,
                         f.spill_loads);
    else
      out += ", no spills";
    if (f.stack) out += fmt::format(", {} bytes stack frame", f.stack);
    if (k.smem) out += fmt::format(", {} bytes static shared memory", k.smem);
    out += "\n";
  }
  return out;
}

}  // namespace kevo::operators::llm
