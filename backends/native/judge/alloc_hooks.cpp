#include "alloc_hooks.hpp"

#include <errno.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

// glibc's own allocator, exported for exactly this use (malloc replacement).
extern "C" {
void* __libc_malloc(std::size_t) noexcept;
void* __libc_calloc(std::size_t, std::size_t) noexcept;
void* __libc_realloc(void*, std::size_t) noexcept;
void* __libc_memalign(std::size_t, std::size_t) noexcept;
void __libc_free(void*) noexcept;
std::size_t malloc_usable_size(void*) noexcept;
}

namespace kevo::native::judge {
namespace {

// Constant-initialised: malloc runs before any constructor.
char g_line[512];
std::size_t g_prefix_len = 0;
char g_suffix[64];
std::size_t g_suffix_len = 0;
std::atomic<int> g_fd{-1};
std::atomic<bool> g_poison{false};
std::atomic<std::uint64_t> g_failures{0};
std::atomic<std::uint64_t> g_last_bytes{0};
std::atomic<int> g_reported{0};
std::atomic<std::atomic<std::uint64_t>*> g_slot{nullptr};

void report(std::size_t bytes) {
  g_failures.fetch_add(1, std::memory_order_relaxed);
  g_last_bytes.store(bytes, std::memory_order_relaxed);
  if (auto* slot = g_slot.load(std::memory_order_relaxed)) slot->store(bytes, std::memory_order_relaxed);
  const int fd = g_fd.load(std::memory_order_relaxed);
  // A few lines suffice; a loop of failing allocations must not flood the pipe.
  if (fd < 0 || g_reported.fetch_add(1, std::memory_order_relaxed) >= 4) return;
  char buf[sizeof g_line + 32];
  std::memcpy(buf, g_line, g_prefix_len);
  char* out = buf + g_prefix_len;
  char digits[24];
  int n = 0;
  std::uint64_t v = bytes;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v && n < 22);
  while (n) *out++ = digits[--n];
  std::memcpy(out, g_suffix, g_suffix_len);
  out += g_suffix_len;
  const char* p = buf;
  std::size_t left = static_cast<std::size_t>(out - buf);
  while (left) {
    ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    p += w;
    left -= static_cast<std::size_t>(w);
  }
}

inline void* fresh(void* p, std::size_t n) {
  if (!p) {
    if (n) report(n);
  } else if (g_poison.load(std::memory_order_relaxed)) {
    std::memset(p, 0xFF, n);
  }
  return p;
}

}  // namespace

void set_alloc_report(int fd, const std::string& prefix, const std::string& suffix) {
  if (prefix.size() > 400 || suffix.size() >= sizeof g_suffix) return;
  std::memcpy(g_line, prefix.data(), prefix.size());
  g_prefix_len = prefix.size();
  std::memcpy(g_suffix, suffix.data(), suffix.size());
  g_suffix_len = suffix.size();
  g_fd.store(fd);
}

void set_alloc_slot(std::atomic<std::uint64_t>* slot) { g_slot.store(slot); }
void set_alloc_poison(bool on) { g_poison.store(on); }
std::uint64_t alloc_failures() { return g_failures.load(); }
std::uint64_t last_failed_alloc_bytes() { return g_last_bytes.load(); }

}  // namespace kevo::native::judge

using kevo::native::judge::fresh;

extern "C" {

void* malloc(std::size_t n) noexcept { return fresh(__libc_malloc(n), n); }

void free(void* p) noexcept { __libc_free(p); }

void* calloc(std::size_t a, std::size_t b) noexcept {
  void* p = __libc_calloc(a, b);
  if (!p && a && b) kevo::native::judge::fresh(nullptr, (b && a > SIZE_MAX / b) ? SIZE_MAX : a * b);
  return p;   // zeroed by contract: never poisoned
}

void* realloc(void* old, std::size_t n) noexcept {
  const std::size_t had = old ? malloc_usable_size(old) : 0;
  void* p = __libc_realloc(old, n);
  if (!p) {
    if (n) kevo::native::judge::fresh(nullptr, n);
    return p;
  }
  if (n > had) fresh(static_cast<char*>(p) + had, n - had);
  return p;
}

void* memalign(std::size_t align, std::size_t n) noexcept { return fresh(__libc_memalign(align, n), n); }

void* aligned_alloc(std::size_t align, std::size_t n) noexcept { return fresh(__libc_memalign(align, n), n); }

int posix_memalign(void** out, std::size_t align, std::size_t n) noexcept {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = fresh(__libc_memalign(align, n), n);
  if (!p && n) return ENOMEM;
  *out = p;
  return 0;
}

void* valloc(std::size_t n) noexcept {
  return fresh(__libc_memalign(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)), n), n);
}

void* pvalloc(std::size_t n) noexcept {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t rounded = (n + page - 1) / page * page;
  return fresh(__libc_memalign(page, rounded ? rounded : page), rounded);
}

}  // extern "C"
