// The CPU backend: the native pipeline (kevo/native/backend.hpp) with the
// host C++ compiler and kevo-cpu-worker as its judge. Config keys and
// defaults: docs/sandbox.md; verdicts: docs/verdicts.md.
#pragma once

#include "kevo/native/backend.hpp"

namespace kevo::cpu {

using CpuOptions = native::NativeOptions;
using CpuLimits = native::NativeLimits;
using CpuTiming = native::NativeTiming;
using CpuFlavour = native::Flavour;
using CpuBackend = native::NativeBackend;
using native::compiled_source;
using native::default_cache_dir;
using native::default_flush_kb;
using native::to_json;

// Reads "backend": {"cpu": {...}} (unknown keys are InputErrors); a
// missing roofline peak is estimated for this machine.
CpuOptions parse_cpu_options(StrictObject& obj, CpuOptions defaults = {});

// Throws Failure when the compiler or the worker cannot be found.
std::unique_ptr<Backend> make_cpu_backend(CpuOptions options);

}  // namespace kevo::cpu
