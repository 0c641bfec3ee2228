// kevo:params begin
#define THREADS 1
#define VEC 1
#define UNROLL 1
#define EXP_libm 1
#define EXP "libm"
#define PASSES_recompute 1
#define PASSES "recompute"
// kevo:params end
// softmax over each row of an R x C row-major float32 matrix:
//   Y[r][c] = exp(X[r][c] - m_r) / sum_c' exp(X[r][c'] - m_r),  m_r = max_c X[r][c]
//
// Parameters:
//   THREADS  OpenMP threads; rows are split statically between them.
//   VEC      lanes per GCC vector-extension vector (1 = scalar code). Columns
//            past the last full vector take the scalar path.
//   UNROLL   unroll factor of the vector loops (#pragma GCC unroll).
//   EXP      "libm": std::exp per element; "poly": a branch-free polynomial
//            exp that vectorizes (valid for x <= 0, which softmax guarantees).
//   PASSES   "store": the sum pass stores exp(x - m) into Y and the last pass
//            rescales Y; "recompute": the last pass recomputes exp(x - m).
#include <cmath>
#include <cstdint>
#include <cstring>

#define KEVO_STR(x) #x
#define KEVO_PRAGMA(x) _Pragma(KEVO_STR(x))
#define UNROLLED KEVO_PRAGMA(GCC unroll UNROLL)

static inline float pow2(float n) {
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
static inline float clamp_exp_arg(float x) { return x < -87.0f ? -87.0f : x; }

#if VEC > 1
typedef float vfloat __attribute__((vector_size(VEC * sizeof(float))));
typedef int32_t vint __attribute__((vector_size(VEC * sizeof(int32_t))));
// memcpy: rows are only float-aligned.
static inline vfloat load_vec(const float* p) {
  vfloat v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void store_vec(float* p, vfloat v) { std::memcpy(p, &v, sizeof v); }
static inline vfloat pow2(vfloat n) {
  const vint bits = (__builtin_convertvector(n, vint) + 127) << 23;
  return reinterpret_cast<vfloat>(bits);
}
static inline vfloat clamp_exp_arg(vfloat x) {
  const vfloat lo = vfloat{} - 87.0f;
  return x < lo ? lo : x;
}
#endif

// exp(x) = 2^n * exp(r) with n = round(x / ln2) and |r| <= ln2 / 2; exp(r)
// by its degree-6 Taylor polynomial (relative error below 2e-7). Written once
// for float and the vector type; the caller clamps x to [-87, 0] so 2^n stays
// a normal float.
template <class F>
static inline F exp_core(F x) {
  const F n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x * log2(e))
  const F r = (x - n * 0.693359375f) - n * -2.12194440e-4f;            // ln2 split hi + lo
  F p = r * (1.0f / 720.0f) + (1.0f / 120.0f);
  p = p * r + (1.0f / 24.0f);
  p = p * r + (1.0f / 6.0f);
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * pow2(n);
}

static inline float exp_scalar(float x) {
#if defined(EXP_poly)
  return exp_core(clamp_exp_arg(x));
#else
  return std::exp(x);
#endif
}

#if VEC > 1
static inline vfloat exp_vector(vfloat x) {
#if defined(EXP_poly)
  return exp_core(clamp_exp_arg(x));
#else
  vfloat y;
  for (int v = 0; v < VEC; ++v) y[v] = std::exp(x[v]);
  return y;
#endif
}
#endif

static void softmax_row(const float* x, float* y, int C) {
#if VEC > 1
  const int cv = C / VEC * VEC;  // end of the full vectors
#else
  const int cv = 0;              // everything takes the scalar path
#endif
  // pass 1: row maximum
  float m = x[0];
#if VEC > 1
  if (cv > 0) {
    vfloat vm = load_vec(x);
    UNROLLED
    for (int c = VEC; c < cv; c += VEC) {
      const vfloat v = load_vec(x + c);
      vm = v > vm ? v : vm;
    }
    for (int v = 0; v < VEC; ++v) m = vm[v] > m ? vm[v] : m;
  }
#endif
  for (int c = cv; c < C; ++c) m = x[c] > m ? x[c] : m;

  // pass 2: sum of exp(x - m)
  float s = 0.0f;
#if VEC > 1
  vfloat vs = vfloat{};
  UNROLLED
  for (int c = 0; c < cv; c += VEC) {
    const vfloat e = exp_vector(load_vec(x + c) - m);
#if defined(PASSES_store)
    store_vec(y + c, e);
#endif
    vs += e;
  }
  for (int v = 0; v < VEC; ++v) s += vs[v];
#endif
  for (int c = cv; c < C; ++c) {
    const float e = exp_scalar(x[c] - m);
#if defined(PASSES_store)
    y[c] = e;
#endif
    s += e;
  }

  // pass 3: normalise
  const float inv = 1.0f / s;
#if VEC > 1
  UNROLLED
  for (int c = 0; c < cv; c += VEC) {
#if defined(PASSES_store)
    store_vec(y + c, load_vec(y + c) * inv);
#else
    store_vec(y + c, exp_vector(load_vec(x + c) - m) * inv);
#endif
  }
#endif
  for (int c = cv; c < C; ++c) {
#if defined(PASSES_store)
    y[c] *= inv;
#else
    y[c] = exp_scalar(x[c] - m) * inv;
#endif
  }
}

extern "C" void softmax(const float* X, float* Y, int32_t R, int32_t C) {
#pragma omp parallel for num_threads(THREADS) schedule(static)
  for (int32_t r = 0; r < R; ++r)
    softmax_row(X + static_cast<int64_t>(r) * C, Y + static_cast<int64_t>(r) * C, C);
}
