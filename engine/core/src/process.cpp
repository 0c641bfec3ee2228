#include "kevo/core/process.hpp"

#include <system_error>

namespace kevo {

std::filesystem::path self_executable() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : p;
}

}  // namespace kevo
