// The evaluation worker replaces malloc & co. (forwarding to glibc's
// __libc_* entry points) for two reasons:
//  * a failed allocation under RLIMIT_AS is reported on the result pipe at
//    once (write() only), so that the crash or std::bad_alloc that usually
//    follows is judged memory_limit, not runtime_error;
//  * while candidate code runs for correctness, fresh blocks are filled with
//    0xFF bytes (NaN for floats) so that a kernel that reads memory it never
//    initialised gives NaN instead of a lucky zero from a fresh page.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kevo::cpu::worker {

// Sets the report line: prefix + bytes + suffix, written to fd. Copied into
// static storage (prefix at most 400 bytes).
void set_alloc_report(int fd, const std::string& prefix, const std::string& suffix);
void set_alloc_poison(bool on);
std::uint64_t alloc_failures();          // how many allocations failed so far
std::uint64_t last_failed_alloc_bytes(); // size of the last failed one

}  // namespace kevo::cpu::worker
