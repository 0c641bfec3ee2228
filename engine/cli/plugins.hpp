// The application's plugin table: the one place that names every backend and
// operator type (explicit registration, see docs/architecture.md).
#pragma once

#include "kevo/engine/config.hpp"

namespace kevo::app {

engine::Plugins builtin_plugins();

}  // namespace kevo::app
