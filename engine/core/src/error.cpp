#include "kevo/core/error.hpp"

#include <cerrno>
#include <cstring>
#include <string>

namespace kevo {
namespace {

std::string input_message(const std::string& file, const std::string& key,
                          const std::string& expected) {
  std::string msg;
  if (!file.empty()) msg += file;
  if (!key.empty()) {
    if (!msg.empty()) msg += ": ";
    msg += key;
  }
  if (!expected.empty()) {
    if (!msg.empty()) msg += ": ";
    // "unknown key; expected one of: ..." names the problem first and reads
    // badly behind another "expected".
    const bool verbatim = expected.rfind("unknown key", 0) == 0 || expected.rfind("duplicate key", 0) == 0;
    msg += verbatim ? expected : "expected " + expected;
  }
  if (msg.empty()) msg = "invalid input";
  return msg;
}

std::string with_location(const std::string& what, const std::source_location& where) {
  // Only the file's base name: full build paths would leak the build machine
  // into user-facing messages and make them differ between builds.
  std::string file = where.file_name();
  if (auto slash = file.find_last_of('/'); slash != std::string::npos) file.erase(0, slash + 1);
  return what + " (" + file + ":" + std::to_string(where.line()) + ")";
}

}  // namespace

InputError::InputError(std::string file, std::string key, std::string expected)
    : std::runtime_error(input_message(file, key, expected)),
      file_(std::move(file)),
      key_(std::move(key)),
      expected_(std::move(expected)) {}

Failure::Failure(const std::string& what, std::source_location where)
    : std::runtime_error(with_location(what, where)) {}

void check_errno(bool ok, const std::string& what, std::source_location where) {
  if (ok) return;
  // Capture errno first: building the message may allocate and clobber it.
  const int err = errno;
  throw Failure(what + ": " + std::strerror(err), where);
}

}  // namespace kevo
