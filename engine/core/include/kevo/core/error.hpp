// Two error channels (see docs/architecture.md):
//  * InputError: the user's input is wrong (config, task manifest, command
//    line, candidate file). The CLI prints it and exits 2. The message always
//    names the file, the key (a JSON pointer such as /budget/evaluations) and
//    what was expected.
//  * Failure: a failed system call, library call or broken invariant. The CLI
//    prints it and exits 1.
// Expected failures of candidates (compile error, crash, timeout...) are never
// exceptions: they are Verdict values and lineage data.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>

namespace kevo {

class InputError : public std::runtime_error {
 public:
  // file: path of the offending input ("" for the command line);
  // key: JSON pointer or option name ("" when the whole input is bad);
  // expected: what would have been accepted, in words.
  // what() is "file: key: expected <expected>", empty parts left out; an
  // `expected` starting "unknown key" or "duplicate key" is shown as is.
  InputError(std::string file, std::string key, std::string expected);

  const std::string& file() const noexcept { return file_; }
  const std::string& key() const noexcept { return key_; }
  const std::string& expected() const noexcept { return expected_; }

 private:
  std::string file_, key_, expected_;
};

class Failure : public std::runtime_error {
 public:
  explicit Failure(const std::string& what,
                   std::source_location where = std::source_location::current());
};

// Throws Failure with strerror(errno) appended when `ok` is false.
void check_errno(bool ok, const std::string& what,
                 std::source_location where = std::source_location::current());

}  // namespace kevo
