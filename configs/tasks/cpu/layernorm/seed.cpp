// kevo:params begin
#define THREADS 1
#define VEC 1
#define ACC 1
#define UNROLL 1
#define STATS_twopass 1
#define STATS "twopass"
// kevo:params end
// layernorm over each row of an R x C row-major float32 matrix:
//   mean = sum_c x[c] / C,  var = sum_c (x[c] - mean)^2 / C,
//   y[c] = (x[c] - mean) / sqrt(var + eps) * gamma[c] + beta[c]
//
// Parameters:
//   THREADS  OpenMP threads; rows are split statically between them.
//   VEC      lanes per GCC vector-extension vector (1 = plain float).
//   ACC      independent accumulators in the reductions (hides add latency).
//   UNROLL   unroll factor of the normalising loop (#pragma GCC unroll).
//   STATS    "twopass": sum, then sum of squared deviations from the mean;
//            "onepass": sum and sum of squares of d = x - x[0] together,
//            var = E[d^2] - E[d]^2 (one read of the row less). The shift by
//            the row's first element keeps a large mean from cancelling:
//            E[x^2] - mean^2 itself loses every digit once |mean| >> stddev.
// Columns past the last full block of ACC vectors, and past the last full
// vector, take shorter loops, so every C is handled.
#include <cmath>
#include <cstdint>
#include <cstring>

#define KEVO_STR(x) #x
#define KEVO_PRAGMA(x) _Pragma(KEVO_STR(x))
#define UNROLLED KEVO_PRAGMA(GCC unroll UNROLL)

#if VEC > 1
typedef float vec_t __attribute__((vector_size(VEC * sizeof(float))));
static inline float hsum(vec_t v) {
  float s = 0.0f;
  for (int i = 0; i < VEC; ++i) s += v[i];
  return s;
}
#else
typedef float vec_t;
static inline float hsum(vec_t v) { return v; }
#endif
// memcpy: rows are only float-aligned.
static inline vec_t load_vec(const float* p) {
  vec_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void store_vec(float* p, vec_t v) { std::memcpy(p, &v, sizeof v); }

static void layernorm_row(const float* x, const float* g, const float* b, float* y, int C, float eps) {
  const int block = VEC * ACC;
  const int cb = C / block * block;  // end of the full blocks of ACC vectors
  const int cv = C / VEC * VEC;      // end of the full vectors
  float mean, var;
#if defined(STATS_twopass)
  {
    vec_t acc[ACC];
    for (int a = 0; a < ACC; ++a) acc[a] = vec_t{};
    for (int c = 0; c < cb; c += block)
      for (int a = 0; a < ACC; ++a) acc[a] += load_vec(x + c + a * VEC);
    for (int c = cb; c < cv; c += VEC) acc[0] += load_vec(x + c);
    float s = 0.0f;
    for (int a = 0; a < ACC; ++a) s += hsum(acc[a]);
    for (int c = cv; c < C; ++c) s += x[c];
    mean = s / C;
  }
  {
    vec_t acc[ACC];
    for (int a = 0; a < ACC; ++a) acc[a] = vec_t{};
    for (int c = 0; c < cb; c += block)
      for (int a = 0; a < ACC; ++a) {
        const vec_t d = load_vec(x + c + a * VEC) - mean;
        acc[a] += d * d;
      }
    for (int c = cb; c < cv; c += VEC) {
      const vec_t d = load_vec(x + c) - mean;
      acc[0] += d * d;
    }
    float s = 0.0f;
    for (int a = 0; a < ACC; ++a) s += hsum(acc[a]);
    for (int c = cv; c < C; ++c) s += (x[c] - mean) * (x[c] - mean);
    var = s / C;
  }
#else  // onepass, shifted by k = x[0]
  {
    const float k = x[0];
    vec_t acc[ACC], acc2[ACC];
    for (int a = 0; a < ACC; ++a) acc[a] = acc2[a] = vec_t{};
    for (int c = 0; c < cb; c += block)
      for (int a = 0; a < ACC; ++a) {
        const vec_t d = load_vec(x + c + a * VEC) - k;
        acc[a] += d;
        acc2[a] += d * d;
      }
    for (int c = cb; c < cv; c += VEC) {
      const vec_t d = load_vec(x + c) - k;
      acc[0] += d;
      acc2[0] += d * d;
    }
    float s = 0.0f, s2 = 0.0f;
    for (int a = 0; a < ACC; ++a) {
      s += hsum(acc[a]);
      s2 += hsum(acc2[a]);
    }
    for (int c = cv; c < C; ++c) {
      const float d = x[c] - k;
      s += d;
      s2 += d * d;
    }
    const float dm = s / C;
    mean = k + dm;
    var = s2 / C - dm * dm;
    if (var < 0.0f) var = 0.0f;  // rounding can push a zero variance below 0
  }
#endif
  const float rstd = 1.0f / std::sqrt(var + eps);
  UNROLLED
  for (int c = 0; c < cv; c += VEC)
    store_vec(y + c, (load_vec(x + c) - mean) * rstd * load_vec(g + c) + load_vec(b + c));
  for (int c = cv; c < C; ++c) y[c] = (x[c] - mean) * rstd * g[c] + b[c];
}

extern "C" void layernorm(const float* X, const float* gamma, const float* beta, float* Y,
                          int32_t R, int32_t C, float eps) {
#pragma omp parallel for num_threads(THREADS) schedule(static)
  for (int32_t r = 0; r < R; ++r)
    layernorm_row(X + static_cast<int64_t>(r) * C, gamma, beta, Y + static_cast<int64_t>(r) * C, C, eps);
}
