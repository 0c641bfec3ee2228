// The CPU flavour of the native pipeline: its config block and the
// machine's roofline peaks. Declared in kevo/cpu/cpu_backend.hpp.
#include "kevo/cpu/cpu_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace kevo::native {

namespace {

double max_clock_ghz() {
  if (std::ifstream f("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"); f) {
    double khz = 0;
    if (f >> khz && khz > 0) return khz / 1e6;
  }
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("cpu MHz", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return 1.5 * std::atof(line.c_str() + colon + 1) / 1e3;   // turbo headroom
    }
  return 5.0;
}

// Single-precision FLOP per cycle and core: two FMA units of the widest
// vector the flags name.
double flops_per_cycle() {
  std::ifstream in("/proc/cpuinfo");
  std::string flags;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) {
      flags = " " + line + " ";
      break;
    }
  auto has = [&](const char* f) { return flags.find(std::string(" ") + f + " ") != std::string::npos; };
  if (has("avx512f")) return 64;
  if (has("avx2") && has("fma")) return 32;
  if (has("avx")) return 16;
  if (has("sve")) return 32;
  return 16;
}

// A copy of 64 MiB, best of three, in GB/s (bytes read plus written).
double copy_gbps() {
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  std::vector<char> a(kBytes, 1), b(kBytes, 2);
  double best = 0.0;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(b.data(), a.data(), kBytes);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, 2.0 * static_cast<double>(kBytes) / s / 1e9);
    std::swap(a, b);
  }
  return best;
}

}  // namespace

NativeRoofline estimate_cpu_roofline(int cores) {
  NativeRoofline r;
  const int n = std::max(cores, 1);
  // Upper bounds, doubled: the floor is a sanity check no honest kernel
  // meets (every timed output is checked; the floor catches a clock that
  // lies), not a target.
  r.peak_gflops = 2.0 * n * max_clock_ghz() * flops_per_cycle();
  r.peak_gbps = 4.0 * n * std::max(copy_gbps(), 5.0);
  return r;
}

}  // namespace kevo::native

namespace kevo::cpu {

CpuOptions parse_cpu_options(StrictObject& obj, CpuOptions defaults) {
  native::NativeRoofline roof = defaults.roofline;
  if (auto r = obj.optional_object("roofline")) {
    roof.peak_gflops = r->number("peak_gflops", roof.peak_gflops, 0, 1e9);
    roof.peak_gbps = r->number("peak_gbps", roof.peak_gbps, 0, 1e9);
    roof.floor_fraction = r->number("floor_fraction", roof.floor_fraction, 0, 1);
    r->finish();
  }
  CpuOptions o = native::parse_native_options(obj, std::move(defaults));
  if (roof.peak_gflops == 0 || roof.peak_gbps == 0) {
    const native::NativeRoofline est = native::estimate_cpu_roofline(usable_cores());
    if (roof.peak_gflops == 0) roof.peak_gflops = est.peak_gflops;
    if (roof.peak_gbps == 0) roof.peak_gbps = est.peak_gbps;
  }
  o.roofline = roof;
  return o;
}

std::unique_ptr<Backend> make_cpu_backend(CpuOptions options) { return native::make_native_backend(std::move(options)); }

}  // namespace kevo::cpu
