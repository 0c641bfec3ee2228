// The application's plugin table: the one place that names every backend and
// operator type (explicit registration, see docs/architecture.md). The kevo
// executable, the engine tests and the engine benchmark all build their
// plugins here (library kevo_plugins), so that config OperatorSpecs become
// operators, and the LLM service and its run-wide budget are wired, the same
// way everywhere.
#pragma once

#include "kevo/engine/config.hpp"

#include <string>
#include <vector>

namespace kevo::app {

// Every backend type this build has: cpu, null, and cuda where the CUDA
// toolkit was found.
engine::Plugins builtin_plugins();
// The same table with only these backend types (each one this build has;
// tests and benchmarks use {"null"}). Throws Failure for an unknown type.
engine::Plugins builtin_plugins(const std::vector<std::string>& backend_types);
// Every backend type, for checking configs without running them (kevo
// campaign plan): the LLM service reads its keys but starts no local model
// server.
engine::Plugins checking_plugins();

}  // namespace kevo::app
