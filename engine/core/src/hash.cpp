#include "kevo/core/hash.hpp"

#include <algorithm>
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

namespace {

constexpr std::uint64_t rotl(std::uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct SipState {
  std::uint64_t v0, v1, v2, v3;
  void round() noexcept {
    v0 += v1;
    v1 = rotl(v1, 13) ^ v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16) ^ v2;
    v0 += v3;
    v3 = rotl(v3, 21) ^ v0;
    v2 += v1;
    v1 = rotl(v1, 17) ^ v2;
    v2 = rotl(v2, 32);
  }
  void absorb(std::uint64_t m) noexcept {
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
};

std::uint64_t load_le64(const unsigned char* p, std::size_t n) noexcept {
  std::uint64_t w = 0;
  for (std::size_t i = 0; i < n; ++i) w |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return w;
}

}  // namespace

std::uint64_t siphash24(std::string_view data, std::uint64_t k0, std::uint64_t k1) noexcept {
  SipState s{k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL, k0 ^ 0x6c7967656e657261ULL,
             k1 ^ 0x7465646279746573ULL};
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const std::size_t n = data.size();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) s.absorb(load_le64(p + i, 8));
  s.absorb(load_le64(p + i, n - i) | (static_cast<std::uint64_t>(n & 0xff) << 56));
  s.v2 ^= 0xff;
  for (int r = 0; r < 4; ++r) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string to_hex(const void* data, std::size_t size) {
  static constexpr char digits[] = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out(2 * size, '0');
  for (std::size_t i = 0; i < size; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

// SHA-256 as FIPS 180-4 section 6.2 describes it: the message is taken in
// 512-bit blocks, each expanded to a 64-word schedule and mixed into eight
// 32-bit words of state; the last block carries the padding (a 1 bit, zeros,
// and the message length in bits as a 64-bit big-endian number).
namespace {

// Section 4.2.2: the first 32 bits of the fractional parts of the cube
// roots of the first 64 primes.
constexpr std::uint32_t kSha256K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// Section 5.3.3: the first 32 bits of the fractional parts of the square
// roots of the first 8 primes.
constexpr std::array<std::uint32_t, 8> kSha256Initial = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
constexpr std::uint32_t ch(std::uint32_t x, std::uint32_t y, std::uint32_t z) { return (x & y) ^ (~x & z); }
constexpr std::uint32_t maj(std::uint32_t x, std::uint32_t y, std::uint32_t z) { return (x & y) ^ (x & z) ^ (y & z); }
constexpr std::uint32_t big_sigma0(std::uint32_t x) { return rotr(x, 2) ^ rotr(x, 13) ^ rotr(x, 22); }
constexpr std::uint32_t big_sigma1(std::uint32_t x) { return rotr(x, 6) ^ rotr(x, 11) ^ rotr(x, 25); }
constexpr std::uint32_t small_sigma0(std::uint32_t x) { return rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3); }
constexpr std::uint32_t small_sigma1(std::uint32_t x) { return rotr(x, 17) ^ rotr(x, 19) ^ (x >> 10); }

std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

}  // namespace

void Sha256::reset() noexcept {
  state_ = kSha256Initial;
  buffered_ = 0;
  length_ = 0;
}

void Sha256::compress(const std::uint8_t* block) noexcept {
  std::uint32_t w[64];
  for (int t = 0; t < 16; ++t) w[t] = load_be32(block + 4 * t);
  for (int t = 16; t < 64; ++t) w[t] = small_sigma1(w[t - 2]) + w[t - 7] + small_sigma0(w[t - 15]) + w[t - 16];
  std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  std::uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (int t = 0; t < 64; ++t) {
    const std::uint32_t t1 = h + big_sigma1(e) + ch(e, f, g) + kSha256K[t] + w[t];
    const std::uint32_t t2 = big_sigma0(a) + maj(a, b, c);
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Sha256::update(const void* data, std::size_t size) noexcept {
  const auto* p = static_cast<const std::uint8_t*>(data);
  length_ += size;
  if (buffered_ > 0) {
    const std::size_t take = std::min(size, block_.size() - buffered_);
    std::memcpy(block_.data() + buffered_, p, take);
    buffered_ += take;
    p += take;
    size -= take;
    if (buffered_ < block_.size()) return;
    compress(block_.data());
    buffered_ = 0;
  }
  for (; size >= block_.size(); p += block_.size(), size -= block_.size()) compress(p);
  if (size > 0) std::memcpy(block_.data(), p, size);
  buffered_ = size;
}

Sha256::Digest Sha256::finish() noexcept {
  const std::uint64_t bits = length_ * 8;
  // Section 5.1.1: a 1 bit, then zeros up to 56 bytes into a block, then the
  // length; a block with 56 or more bytes in it spills into one more block.
  block_[buffered_++] = 0x80;
  if (buffered_ > 56) {
    std::memset(block_.data() + buffered_, 0, block_.size() - buffered_);
    compress(block_.data());
    buffered_ = 0;
  }
  std::memset(block_.data() + buffered_, 0, 56 - buffered_);
  for (int i = 0; i < 8; ++i) block_[56 + i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
  compress(block_.data());
  Digest out;
  for (std::size_t i = 0; i < 8; ++i)
    for (std::size_t k = 0; k < 4; ++k) out[4 * i + k] = static_cast<std::uint8_t>(state_[i] >> (24 - 8 * k));
  reset();
  return out;
}

std::string Sha256::finish_hex() {
  const Digest d = finish();
  return to_hex(d.data(), d.size());
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.finish_hex();
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
