#include "kevo/core/process.hpp"

#include <cctype>
#include <string>
#include <system_error>

namespace kevo {

std::filesystem::path self_executable() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : p;
}

bool looks_secret(std::string_view name) {
  std::string up(name);
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const char* w : {"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"})
    if (up.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace kevo
