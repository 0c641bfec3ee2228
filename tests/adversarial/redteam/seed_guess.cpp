// Recovers the judgement's seed from the values of its first inputs (the
// judge's generator rebuilt: xoshiro256** streams derived from the seed and
// an FNV hash of "trial0|v0|A"), searching kevo eval's default seeds (small
// integers) and a run's (derived from a small config seed and a candidate
// id), and throws it at its first call. With the seed, every timed call's
// inputs and the drawn shapes follow (timing/seed_precompute.cpp). The
// fourteenth session's red team found it in 0.2 s; the inputs are now keyed
// by a secret of each judgement (InputKey): "seed not found"
// (RedTeam.TheSeedDoesNotGiveTheInputsAway).
#include <cstdint>
#include <cstring>
#include <string>
namespace rt {
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static inline uint64_t sm(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
struct Rng {
  uint64_t s[4];
  explicit Rng(uint64_t seed) { uint64_t x = seed; for (auto& w : s) w = sm(x); if (!(s[0]|s[1]|s[2]|s[3])) s[0] = 1; }
  uint64_t next() {
    const uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return r;
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  static Rng derive(uint64_t seed, uint64_t stream) {
    uint64_t x = seed; uint64_t a = sm(x);
    uint64_t y = stream ^ 0x6a09e667f3bcc909ULL; uint64_t b = sm(y);
    uint64_t z = a ^ rotl(b, 23) ^ (b * 0x9e3779b97f4a7c15ULL);
    return Rng(sm(z));
  }
};
static inline uint64_t fnv(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) { h ^= c; h *= 0x100000001b3ULL; }
  return h;
}
// the first `k` floats of argument `arg` of visible case 0, tag, block 0
static inline bool matches(uint64_t seed, uint64_t stream, const float* A, int k) {
  Rng r = Rng::derive(seed, stream);
  for (int i = 0; i < k; ++i) {
    float v = float(-1.0 + 2.0 * r.uniform());
    if (std::memcmp(&v, &A[i], 4) != 0) return false;
  }
  return true;
}
// kevo eval's --seed (default 1): small integers; a run's: derive(config.seed, id ^ 0x5eed).next()
static inline bool recover(const float* A, uint64_t stream, uint64_t& seed, std::string& how) {
  for (uint64_t s = 0; s < (1u << 20); ++s)
    if (matches(s, stream, A, 4)) { seed = s; how = "direct " + std::to_string(s); return true; }
  for (uint64_t cs = 0; cs < 64; ++cs)
    for (uint64_t id = 0; id < (1u << 16); ++id) {
      uint64_t s = Rng::derive(cs, id ^ 0x5eedULL).next();
      if (matches(s, stream, A, 4)) { seed = s; how = "run seed " + std::to_string(cs) + " candidate id " + std::to_string(id); return true; }
    }
  return false;
}
}  // namespace rt
#include <stdexcept>
extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  uint64_t seed = 0;
  std::string how;
  if (rt::recover(A, rt::fnv("trial0|v0|A"), seed, how))
    throw std::runtime_error("judgement seed = " + std::to_string(seed) + " (" + how + ")");
  throw std::runtime_error("seed not found");
}
