// The judge's executable (and so every kernel host, which runs it as
// `--host`) replaces malloc & co. (forwarding to glibc's __libc_* entry
// points) for two reasons:
//  * a failed allocation under RLIMIT_AS is recorded at once (in the host's
//    control block, or written to a descriptor), so that the crash or
//    std::bad_alloc that usually follows is judged memory_limit, not
//    runtime_error;
//  * while candidate code runs for correctness, fresh blocks are filled with
//    0xFF bytes (NaN for floats) so that a kernel that reads memory it never
//    initialised gives NaN instead of a lucky zero from a fresh page.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kevo::native::judge {

// Sets the report line: prefix + bytes + suffix, written to fd. Copied into
// static storage (prefix at most 400 bytes).
void set_alloc_report(int fd, const std::string& prefix, const std::string& suffix);
// Or: the size of each failed allocation is stored in *slot (null: off).
void set_alloc_slot(std::atomic<std::uint64_t>* slot);
void set_alloc_poison(bool on);
std::uint64_t alloc_failures();          // how many allocations failed so far
std::uint64_t last_failed_alloc_bytes(); // size of the last failed one

}  // namespace kevo::native::judge
