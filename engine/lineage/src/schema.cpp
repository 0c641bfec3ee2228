#include "kevo/lineage/schema.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace kevo::lineage {
namespace {

constexpr std::array<std::string_view, kEventKindCount> kEventNames = {
    "start", "stop", "resume", "migration_in", "migration_out", "checkpoint", "note", "llm"};

// Length of the valid UTF-8 sequence starting at s[i], or 0 when invalid
// (overlong forms, surrogates and code points above U+10FFFF included).
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) { n = 3; lo = 0xA0; }
  else if (c >= 0xE1 && c <= 0xEC) n = 3;
  else if (c == 0xED) { n = 3; hi = 0x9F; }
  else if (c >= 0xEE && c <= 0xEF) n = 3;
  else if (c == 0xF0) { n = 4; lo = 0x90; }
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) { n = 4; hi = 0x8F; }
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string_view to_string(EventKind k) {
  const auto i = static_cast<std::size_t>(k);
  return i < kEventNames.size() ? kEventNames[i] : std::string_view("?");
}

std::string_view Row::op_name() const {
  std::size_t n = 0;
  while (n < kOpBytes && op[n] != '\0') ++n;
  return {op, n};
}

std::string rank_file_name(int rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%04d.h5", rank);
  return buf;
}

// Bytes at the start of `text` that are valid UTF-8 without NUL.
static std::size_t valid_prefix(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    // Eight ASCII bytes without NUL at a time: most texts are plain ASCII.
    if (i + 8 <= text.size()) {
      std::uint64_t w;
      std::memcpy(&w, text.data() + i, 8);
      const bool high = (w & 0x8080808080808080ULL) != 0;
      const bool zero = ((w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL) != 0;
      if (!high && !zero) {
        i += 8;
        continue;
      }
    }
    if (text[i] == '\0') break;
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) break;
    i += n;
  }
  return i;
}

bool is_valid_utf8(std::string_view text) { return valid_prefix(text) == text.size(); }

std::string to_valid_utf8(std::string_view text) {
  // Fast path: most texts are clean and are returned as they are.
  std::size_t i = valid_prefix(text);
  if (i == text.size()) return std::string(text);
  std::string out(text.substr(0, i));
  out.reserve(text.size() + 16);
  while (i < text.size()) {
    if (text[i] == '\0') {
      out += "\xE2\x90\x80";  // U+2400 SYMBOL FOR NULL
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

std::string_view utf8_prefix(std::string_view name, std::size_t bytes) {
  if (name.size() <= bytes) return name;
  std::size_t n = bytes;
  // Step back over continuation bytes so no character is cut in half.
  while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
  return name.substr(0, n);
}

}  // namespace kevo::lineage
