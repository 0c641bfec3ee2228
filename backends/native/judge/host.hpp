// A kernel host: the process that holds one side's code (a candidate, or
// the reference) and makes the calls its judge asks for. It is started by
// RemoteEndpoint as `<judge executable> --host ...`, in namespaces of its
// own where the kernel allows, and before it loads the library it makes its
// file system read-only, sets its limits, drops every capability, installs
// the allow-list seccomp policy and reports all of that to the judge on a
// pipe it then closes. It sees its own argument buffers (the arena) and
// nothing of the judge: no reference outputs, no expected values, no clock
// that counts, no result channel. Documented in docs/sandbox.md.
#pragma once

#include "kevo/sandbox/isolation.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace kevo::native::judge {

// What a host whose argument buffers live on a device (CUDA) adds; the
// flavour's worker supplies it. Each function returns "" or why it failed.
struct HostDevice {
  // Before the file system is closed and before the policy: the device
  // opened (its context created) and the judge's exported arena
  // (descriptor `arena_fd`, `bytes` long) mapped; sets `base` to where
  // this process sees it.
  std::function<std::string(int arena_fd, std::size_t bytes, char*& base)> open;
  // After every call of the side's code: waits for all of its device work
  // and reports a device error (the call then counts as one that threw).
  std::function<std::string()> finish_call;
  // A calibration call: the device's shortest round trip (an empty kernel
  // and the same wait), made before any code of the side is loaded.
  std::function<std::string()> null_call;
  // Endpoint::prime(): an empty kernel and the wait, so that this host's
  // context is the device's current one before a timed call.
  std::function<std::string()> prime_call;
  // The device files bound into the host's root of its own.
  std::vector<std::string> device_files;
  // Where the host has no root of its own (no mount namespace): confines
  // its writes some other way (Landlock), noting what it did.
  std::function<void(sandbox::IsolationReport&)> confine_writes;
};

// The host's main(): argv as RemoteEndpoint builds it (argv[1] == "--host").
// Descriptors: 3 the control block (memfd; with the buffers unless the
// host is a device's), 4 the report pipe, 5 the library, 6 the device
// arena (a device's host only).
[[noreturn]] void host_main(int argc, char** argv, const HostDevice* device = nullptr);

}  // namespace kevo::native::judge
