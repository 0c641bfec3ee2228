// Facts about the running process that several modules need.
#pragma once

#include <filesystem>

namespace kevo {

// This executable's path (/proc/self/exe); empty when it cannot be read.
// Tools installed next to kevo (workers, the Python tools, scripts) are
// found beside it.
std::filesystem::path self_executable();

}  // namespace kevo
