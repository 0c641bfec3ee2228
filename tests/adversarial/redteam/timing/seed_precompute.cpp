// Recovers the judgement's seed at its first call (as ../seed_guess.cpp),
// then, untimed, rebuilds the inputs of the timed calls ("timing<k>") and
// computes their outputs, and answers each timed call from that table
// after a wait sized to stay above the roofline floor; any other call is
// computed honestly. Against seeds alone it was correct at 28x where the
// honest kernel got 2.2x (the fourteenth session's red team); with keyed
// inputs it finds no seed and computes honestly (expect_no_gain).
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
// Recovers the judgement's seed at its first call, then (untimed) computes the outputs of the
// timed calls' inputs ("timing<k>"), and answers each timed call from that table after a wait
// sized to stay above the roofline floor. Any other call is computed honestly.
#include <chrono>
#include <thread>
#include <unordered_map>
#include <vector>
#include <unistd.h>
namespace {
bool g_tried = false, g_have = false;
std::unordered_map<uint64_t, std::vector<float>> g_table;
double g_wait_ns = 0;
constexpr int64_t kBlock = 1 << 16;
uint64_t key_of(const float* A) { uint64_t k; std::memcpy(&k, A, 8); return k; }
void honest(const float* A, float* out, int32_t M, int32_t N) {
  for (int32_t i = 0; i < M; ++i) { float s = 0; for (int32_t j = 0; j < N; ++j) s += A[int64_t(i) * N + j]; out[i] = s; }
}
void precompute(uint64_t seed, int32_t M, int32_t N, int K) {
  const int64_t n = int64_t(M) * N;
  std::vector<std::vector<float>> outs(K);
  std::vector<uint64_t> keys(K);
  auto work = [&](int t0, int step) {
    std::vector<float> a(n);
    for (int k = t0; k < K; k += step) {
      const uint64_t sid = rt::fnv("timing" + std::to_string(k) + "|v0|A");
      for (int64_t lo = 0; lo < n; lo += kBlock) {
        rt::Rng r = rt::Rng::derive(seed, sid + uint64_t(lo / kBlock) * 0x9E3779B97F4A7C15ULL);
        for (int64_t i = lo; i < std::min(n, lo + kBlock); ++i) a[i] = float(-1.0 + 2.0 * r.uniform());
      }
      outs[k].resize(M);
      honest(a.data(), outs[k].data(), M, N);
      keys[k] = key_of(a.data());
    }
  };
  std::thread th(work, 1, 2); work(0, 2); th.join();
  for (int k = 0; k < K; ++k) g_table[keys[k]] = std::move(outs[k]);
  // the judge's roofline floor is bytes / (4 x cores x copy bandwidth): estimate it, stay 1.5x above
  std::vector<char> x(64 << 20, 1), y(64 << 20);
  double s = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(y.data(), x.data(), x.size());
    s = std::min(s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  double bw = x.size() / s;   // bytes per second
  double floor_s = 4.0 * (double(n) + M) / (4.0 * sysconf(_SC_NPROCESSORS_ONLN) * bw);
  g_wait_ns = 1.5 * floor_s * 1e9;
}
}  // namespace
extern "C" void rowsum(const float* A, float* out, int32_t M, int32_t N) {
  auto t0 = std::chrono::steady_clock::now();
  if (!g_tried && M == 512 && N == 4096) {
    g_tried = true;
    uint64_t seed; std::string how;
    if (rt::recover(A, rt::fnv("trial0|v0|A"), seed, how)) { g_have = true; precompute(seed, M, N, 240); }
  }
  if (g_have) {
    auto it = g_table.find(key_of(A));
    if (it != g_table.end() && int32_t(it->second.size()) == M) {
      std::memcpy(out, it->second.data(), M * sizeof(float));
      while (std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() < g_wait_ns) {}
      return;
    }
  }
  honest(A, out, M, N);
}
