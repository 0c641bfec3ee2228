// A small, portable, serialisable random number generator (xoshiro256**
// seeded through splitmix64). std:: distributions are implementation-defined,
// so kevo draws through these members only: the same seed gives the same
// numbers on every compiler and machine, and the state (four words) goes into
// checkpoints.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kevo {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0);

  std::uint64_t next();                       // uniform 64-bit word
  std::uint64_t below(std::uint64_t n);       // uniform in [0, n), n > 0, unbiased
  std::int64_t range(std::int64_t lo, std::int64_t hi);  // uniform in [lo, hi]
  double uniform();                           // uniform in [0, 1)
  double normal();                            // standard normal (Box-Muller)
  bool chance(double p);                      // true with probability p

  // An independent stream derived from this one's seed and a label; used to
  // give every task / trial / candidate its own reproducible stream.
  static Rng derive(std::uint64_t seed, std::uint64_t stream);

  std::array<std::uint64_t, 4> state() const { return s_; }
  void set_state(const std::array<std::uint64_t, 4>& s) { s_ = s; }
  std::string state_string() const;            // "hex hex hex hex"
  static Rng from_state_string(const std::string& text);

 private:
  std::array<std::uint64_t, 4> s_{};
};

std::uint64_t splitmix64(std::uint64_t& x);

// `bytes` bytes from the kernel's random source (getrandom), as lowercase
// hex: for unique file names and nonces. Never reproducible, unlike Rng.
// Throws Failure when the kernel gives none.
std::string random_hex(std::size_t bytes);

}  // namespace kevo
