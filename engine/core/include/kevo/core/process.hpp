// Facts about the running process that several modules need.
#pragma once

#include <filesystem>
#include <string_view>

namespace kevo {

// This executable's path (/proc/self/exe); empty when it cannot be read.
// Tools installed next to kevo (workers, the Python tools, scripts) are
// found beside it.
std::filesystem::path self_executable();

// Whether an environment variable's name looks like it holds a secret (it
// contains KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL, in any case): such
// variables never reach a process that runs code of a task or a candidate.
bool looks_secret(std::string_view name);

}  // namespace kevo
