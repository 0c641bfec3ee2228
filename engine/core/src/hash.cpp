#include "kevo/core/hash.hpp"

#include <cstdio>
#include <cstring>

namespace kevo {
namespace {

// Character classes by table: normalisation runs on every candidate's
// source (twice), so it is on the engine's hot path.
struct CharTables {
  bool ident[256] = {};
  bool joining[256] = {};
  constexpr CharTables() {
    for (int c = 0; c < 256; ++c)
      ident[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
    for (const char* p = "+-*/%<>=&|!^:.#"; *p; ++p) joining[static_cast<unsigned char>(*p)] = true;
  }
};
constexpr CharTables kTables;

bool ident_char(char c) { return kTables.ident[static_cast<unsigned char>(c)]; }

// Punctuation that can fuse with a neighbour into another token ("- -" vs
// "--", "< <" vs "<<", "/ /" vs "//"): the space between two of these is kept
// so that different programs never normalise to the same text.
bool joining_punct(char c) { return kTables.joining[static_cast<unsigned char>(c)]; }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

std::uint64_t fnv1a64(std::string_view data, std::uint64_t basis) {
  return fnv1a64(data.data(), data.size(), basis);
}

std::uint64_t fnv1a64(const void* data, std::size_t size, std::uint64_t basis) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = basis;
  for (std::size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string normalise_source(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  bool pending_space = false;   // whitespace or a comment since the last token char
  bool line_start = true;       // no token char yet on this source line
  bool in_directive = false;    // this logical line is a preprocessor directive
  std::size_t ident_start = std::string::npos;  // start in `out` of the identifier just written

  // Ends a directive line: directives need their line ends, the rest does not.
  auto end_line = [&] {
    if (in_directive) {
      if (!out.empty() && out.back() != '\n') out += '\n';
      in_directive = false;
    }
    line_start = true;
    pending_space = true;
  };
  // Called before writing token character c.
  auto emit_separator = [&](char c) {
    if (line_start && c == '#') {
      // A directive must start its own line.
      if (!out.empty() && out.back() != '\n') out += '\n';
      in_directive = true;
      pending_space = false;
    }
    line_start = false;
    if (pending_space && !out.empty() && out.back() != '\n') {
      const char prev = out.back();
      // Quotes count as identifier characters here: "C"void would read as a
      // user-defined literal and u8 "x" differs from u8"x".
      const auto wordish = [](char ch) { return ident_char(ch) || ch == '"' || ch == '\''; };
      if ((wordish(prev) && wordish(c)) || (joining_punct(prev) && joining_punct(c)))
        out += ' ';
    }
    pending_space = false;
  };
  auto put = [&](char c) {
    emit_separator(c);
    if (ident_char(c)) {
      if (ident_start == std::string::npos) ident_start = out.size();
    } else {
      ident_start = std::string::npos;
    }
    out += c;
  };

  const std::size_t n = src.size();
  std::size_t i = 0;
  while (i < n) {
    const char c = src[i];
    if (c == '\\' && i + 1 < n && (src[i + 1] == '\n' || (src[i + 1] == '\r' && i + 2 < n && src[i + 2] == '\n'))) {
      // Line splice: the logical line (and any directive) continues.
      i += src[i + 1] == '\n' ? 2 : 3;
      pending_space = true;
      ident_start = std::string::npos;
      continue;
    }
    if (c == '\n') {
      end_line();
      ident_start = std::string::npos;
      ++i;
      continue;
    }
    if (is_space(c)) {
      pending_space = true;
      ident_start = std::string::npos;
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      // Line comment (a splice at its end would continue it; rare enough to ignore).
      while (i < n && src[i] != '\n') ++i;
      pending_space = true;
      ident_start = std::string::npos;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      const std::size_t close = src.find("*/", i + 2);
      i = close == std::string_view::npos ? n : close + 2;
      pending_space = true;
      ident_start = std::string::npos;
      continue;
    }
    if (c == '"' || c == '\'') {
      // Raw string literal R"delim( ... )delim", possibly with an encoding prefix.
      bool raw = false;
      if (c == '"' && ident_start != std::string::npos) {
        const std::string prefix = out.substr(ident_start);
        raw = prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR";
      }
      if (raw) {
        const std::size_t open = src.find('(', i + 1);
        if (open != std::string_view::npos) {
          // Built by appending: operator+ here trips a GCC 12 -Wrestrict false positive.
          std::string close(1, ')');
          close.append(src.substr(i + 1, open - i - 1));
          close += '"';
          const std::size_t end = src.find(close, open + 1);
          const std::size_t stop = end == std::string_view::npos ? n : end + close.size();
          out.append(src.substr(i, stop - i));
          ident_start = std::string::npos;
          i = stop;
          continue;
        }
      }
      // A ' between digits is a C++14 digit separator, not a character literal.
      if (c == '\'' && ident_start != std::string::npos && i + 1 < n && ident_char(src[i + 1]) &&
          out[ident_start] >= '0' && out[ident_start] <= '9') {
        out += c;
        ++i;
        continue;
      }
      put(c);
      ++i;
      while (i < n && src[i] != c && src[i] != '\n') {
        if (src[i] == '\\' && i + 1 < n) out += src[i++];
        out += src[i++];
      }
      if (i < n && src[i] == c) out += src[i++];
      ident_start = std::string::npos;
      continue;
    }
    put(c);
    ++i;
    if (ident_char(c)) {
      // The rest of an identifier or number needs no separator logic.
      std::size_t j = i;
      while (j < n && ident_char(src[j])) ++j;
      out.append(src.data() + i, j - i);
      i = j;
    }
  }
  if (in_directive && !out.empty() && out.back() != '\n') out += '\n';
  return out;
}

std::uint64_t source_hash(std::string_view source) { return fnv1a64(normalise_source(source)); }

}  // namespace kevo
