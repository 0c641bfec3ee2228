// A private scratch directory for one sandboxed process: created with
// mkdtemp (mode 0700) under a base directory and removed recursively when the
// owner is destroyed. Move-only; the destructor never throws.
#pragma once

#include <filesystem>
#include <string>

namespace kevo::sandbox {

class ScratchDir {
 public:
  ScratchDir() = default;
  // Creates BASE/PREFIX-XXXXXX. Throws Failure when it cannot.
  static ScratchDir create(const std::filesystem::path& base, const std::string& prefix = "kevo");
  ~ScratchDir() { remove(); }
  ScratchDir(ScratchDir&& o) noexcept;
  ScratchDir& operator=(ScratchDir&& o) noexcept;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  bool valid() const noexcept { return !path_.empty(); }
  // Removes the directory now (errors are ignored: nothing can be done).
  void remove() noexcept;
  // Gives up ownership: the directory is kept.
  std::filesystem::path release() noexcept;

 private:
  std::filesystem::path path_;
};

// The base for scratch directories when none is configured: $TMPDIR, else /tmp.
std::filesystem::path default_scratch_base();

}  // namespace kevo::sandbox
