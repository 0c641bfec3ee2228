#include "kevo/core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kevo {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";   // U+FFFD

// What one character of the input becomes: `keep` (as it is), or `with`.
struct Step {
  std::size_t bytes = 1;   // input bytes it spans
  bool keep = true;
  std::string_view with;   // the replacement when !keep
};

// The Control Picture of a C0 control or DEL (U+2400 + c, DEL: U+2421), as
// UTF-8: E2 90 (80 + c), E2 90 A1.
std::string_view control_picture(unsigned char c) {
  static const auto table = [] {
    std::array<std::array<char, 3>, 33> t{};
    for (unsigned k = 0; k < 33; ++k) {
      const unsigned cp = k < 32 ? 0x2400 + k : 0x2421;
      t[k] = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
              static_cast<char>(0x80 | (cp & 0x3F))};
    }
    return t;
  }();
  const auto& p = table[c < 32 ? c : 32];
  return {p.data(), p.size()};
}

// The bidirectional controls that reorder how a line shows ("Trojan
// Source": a candidate's line that reads as kevo's, or as another order, on a
// terminal or in a report): U+202A..U+202E (E2 80 AA..AE), U+2066..U+2069
// (E2 81 A6..A9), LRM and RLM U+200E/U+200F (E2 80 8E/8F), ALM U+061C (D8 9C).
bool is_bidi_control(std::string_view text, std::size_t at, std::size_t n) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[at + k]); };
  if (n == 2) return b(0) == 0xD8 && b(1) == 0x9C;
  if (n != 3 || b(0) != 0xE2) return false;
  if (b(1) == 0x80) return (b(2) >= 0xAA && b(2) <= 0xAE) || b(2) == 0x8E || b(2) == 0x8F;
  return b(1) == 0x81 && b(2) >= 0xA6 && b(2) <= 0xA9;
}

Step step(std::string_view text, std::size_t at, const TextRules& rules) {
  const auto c = static_cast<unsigned char>(text[at]);
  if (c < 0x80) {
    const bool control = c < 0x20 || c == 0x7F;
    if (!control || c == '\n' || c == '\t' || (rules.keep_controls && c != 0)) return {};
    return {1, false, control_picture(c)};
  }
  const std::size_t n = utf8_sequence_length(text, at);
  if (n == 0) return {1, false, kReplacement};
  // C1 controls: U+0080..U+009F are C2 80..C2 9F.
  if (!rules.keep_controls && c == 0xC2 && static_cast<unsigned char>(text[at + 1]) < 0xA0)
    return {n, false, kReplacement};
  if (!rules.keep_controls && is_bidi_control(text, at, n)) return {n, false, kReplacement};
  return {n, true, {}};
}

// Whether the sixteen bytes at `p` are all kept whatever the rules, when
// lines are not limited: printable ASCII, '\n' and '\t'.
#if defined(__SSE2__)
bool plain_chunk(const char* p) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  // Signed: below 0x20 are the C0 controls and every byte from 0x80 on.
  const __m128i low = _mm_cmplt_epi8(x, _mm_set1_epi8(0x20));
  const __m128i kept = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\n')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\t')));
  const __m128i del = _mm_cmpeq_epi8(x, _mm_set1_epi8(0x7F));
  return _mm_movemask_epi8(_mm_or_si128(_mm_andnot_si128(kept, low), del)) == 0;
}
#endif

// Bytes at the start of `text` that sanitize_utf8 keeps as they are.
std::size_t clean_prefix(std::string_view text, const TextRules& rules) {
  std::size_t i = 0, line = 0;
  while (i < text.size()) {
#if defined(__SSE2__)
    if (!rules.max_line) {
      while (i + 16 <= text.size() && plain_chunk(text.data() + i)) i += 16;
      if (i == text.size()) break;
    }
#endif
    const auto c = static_cast<unsigned char>(text[i]);
    // Printable ASCII, the common case.
    if (c >= 0x20 && c < 0x7F) {
      if (rules.max_line && ++line > rules.max_line) return i;
      ++i;
      continue;
    }
    const Step s = step(text, i, rules);
    if (!s.keep) return i;
    if (c == '\n') {
      line = 0;
    } else if (rules.max_line && (line += s.bytes) > rules.max_line) {
      return i;
    }
    i += s.bytes;
  }
  return i;
}

}  // namespace

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  if (i >= s.size()) return 0;
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  // The well-formed sequences of Unicode's table 3-7: the second byte's range
  // depends on the first (which rules out overlong forms, surrogates and code
  // points above U+10FFFF); every further byte is 80..BF.
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC) n = 3;
  else if (c == 0xED) n = 3, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, hi = 0x8F;
  else return 0;   // 80..C1 (continuation, overlong leads), F5..FF
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

bool is_clean_utf8(std::string_view text, const TextRules& rules) { return clean_prefix(text, rules) == text.size(); }

std::string sanitize_utf8(std::string_view text, const TextRules& rules) {
  std::size_t i = clean_prefix(text, rules);
  if (i == text.size()) return std::string(text);
  std::string out(text.substr(0, i));
  out.reserve(text.size() + 16);
  const std::size_t nl = out.rfind('\n');
  std::size_t line = nl == std::string::npos ? out.size() : out.size() - nl - 1;   // output bytes of this line
  while (i < text.size()) {
    const Step s = step(text, i, rules);
    if (text[i] == '\n') {
      out += '\n';
      line = 0;
      ++i;
      continue;
    }
    const std::string_view piece = s.keep ? text.substr(i, s.bytes) : s.with;
    if (rules.max_line && line + piece.size() > rules.max_line) {
      // The rest of the line is cut, at a character boundary.
      const std::size_t end = std::min(text.find('\n', i), text.size());
      out += fmt::format("\xE2\x80\xA6 [{} bytes cut]", end - i);
      i = end;
      continue;
    }
    out += piece;
    line += piece.size();
    i += s.bytes;
  }
  return out;
}

std::string_view utf8_prefix(std::string_view text, std::size_t bytes) {
  if (text.size() <= bytes) return text;
  std::size_t n = bytes;
  // Step back over continuation bytes so that no character is cut in half.
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n);
}

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kevo
