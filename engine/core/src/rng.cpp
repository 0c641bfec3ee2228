#include "kevo/core/rng.hpp"

#include "kevo/core/error.hpp"
#include "kevo/core/hash.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cmath>
#include <numbers>
#include <cstdio>
#include <sstream>

namespace kevo {
namespace {

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Rng::Rng(std::uint64_t seed) {
  std::uint64_t x = seed;
  for (auto& w : s_) w = splitmix64(x);
  // splitmix64 never yields four zero words in a row, but an all-zero state
  // would lock xoshiro at zero forever, so guard anyway.
  if (s_[0] == 0 && s_[1] == 0 && s_[2] == 0 && s_[3] == 0) s_[0] = 1;
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::uint64_t Rng::below(std::uint64_t n) {
  if (n == 0) throw Failure("Rng::below(0): empty range");
  // Reject the lowest 2^64 mod n words: the rest are a whole number of
  // copies of [0, n), so the remainder is unbiased. Portable (no 128-bit
  // multiply) and accepts with probability > 1/2 even at worst.
  const std::uint64_t threshold = (0 - n) % n;   // 2^64 mod n
  for (;;) {
    const std::uint64_t r = next();
    if (r >= threshold) return r % n;
  }
}

std::int64_t Rng::range(std::int64_t lo, std::int64_t hi) {
  if (lo > hi) throw Failure("Rng::range: lo > hi");
  const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  if (span == UINT64_MAX) return static_cast<std::int64_t>(next());
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + below(span + 1));
}

double Rng::uniform() {
  // Top 53 bits: every double in [0, 1) on the 2^-53 grid equally likely.
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double Rng::normal() {
  // Box-Muller without caching the second value, so the state alone (four
  // words) determines the future: checkpoints need nothing else.
  double u1 = uniform();
  while (u1 <= 0.0) u1 = uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

bool Rng::chance(double p) {
  if (p <= 0.0) return false;
  if (p >= 1.0) return true;
  return uniform() < p;
}

Rng Rng::derive(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t x = seed;
  std::uint64_t a = splitmix64(x);
  std::uint64_t y = stream ^ 0x6a09e667f3bcc909ULL;
  std::uint64_t b = splitmix64(y);
  // Mix both again so that (seed, stream) and (stream, seed) differ and
  // neighbouring streams are uncorrelated.
  std::uint64_t z = a ^ rotl(b, 23) ^ (b * 0x9e3779b97f4a7c15ULL);
  return Rng(splitmix64(z));
}

std::string Rng::state_string() const {
  char buf[4 * 17 + 1];
  std::snprintf(buf, sizeof buf, "%016llx %016llx %016llx %016llx",
                static_cast<unsigned long long>(s_[0]), static_cast<unsigned long long>(s_[1]),
                static_cast<unsigned long long>(s_[2]), static_cast<unsigned long long>(s_[3]));
  return buf;
}

Rng Rng::from_state_string(const std::string& text) {
  std::istringstream in(text);
  std::array<std::uint64_t, 4> s{};
  for (auto& w : s) {
    std::string word;
    if (!(in >> word) || word.empty() || word.size() > 16 ||
        word.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      throw Failure("bad RNG state string '" + text + "': expected four hex words");
    w = std::stoull(word, nullptr, 16);
  }
  std::string extra;
  if (in >> extra) throw Failure("bad RNG state string '" + text + "': expected four hex words");
  if (s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0)
    throw Failure("bad RNG state string '" + text + "': all-zero state");
  Rng r;
  r.set_state(s);
  return r;
}

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  for (std::size_t got = 0; got < bytes;) {
    const ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    check_errno(n > 0, "getrandom");
    got += static_cast<std::size_t>(n);
  }
  return to_hex(raw.data(), raw.size());
}

}  // namespace kevo
