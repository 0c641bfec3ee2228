#include "kevo/sandbox/scratch_dir.hpp"

#include "kevo/core/error.hpp"

#include <cstdlib>
#include <system_error>
#include <utility>
#include <vector>

namespace kevo::sandbox {

ScratchDir ScratchDir::create(const std::filesystem::path& base, const std::string& prefix) {
  std::string templ = (base / (prefix + "-XXXXXX")).string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  check_errno(::mkdtemp(buf.data()) != nullptr, "mkdtemp " + templ);
  ScratchDir d;
  d.path_ = buf.data();
  return d;
}

ScratchDir::ScratchDir(ScratchDir&& o) noexcept : path_(std::exchange(o.path_, {})) {}

ScratchDir& ScratchDir::operator=(ScratchDir&& o) noexcept {
  if (this != &o) {
    remove();
    path_ = std::exchange(o.path_, {});
  }
  return *this;
}

void ScratchDir::remove() noexcept {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  path_.clear();
}

std::filesystem::path ScratchDir::release() noexcept { return std::exchange(path_, {}); }

std::filesystem::path default_scratch_base() {
  const char* t = std::getenv("TMPDIR");
  if (t && *t) return t;
  return "/tmp";
}

}  // namespace kevo::sandbox
