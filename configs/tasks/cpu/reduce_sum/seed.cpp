// kevo:params begin
#define THREADS 1
#define LOOP_ORDER_cr 1
#define LOOP_ORDER "cr"
#define TILE_C 16
#define VEC 1
#define UNROLL 1
// kevo:params end
// reduce_sum: column sums of an R x C row-major float32 matrix,
//   Y[c] = sum_r X[r][c]   (a reduction over axis 0: C outputs)
//
// The columns are cut into tiles of TILE_C columns, shared statically among
// THREADS OpenMP threads (each tile's outputs belong to one thread: no race).
// Inside a tile LOOP_ORDER picks the loop nest:
//   "cr"  for VEC adjacent columns at a time, walk down all rows (strided
//         reads) keeping UNROLL independent partial sums;
//   "rc"  walk the rows in order and add UNROLL rows at a time into a
//         per-tile accumulator array (contiguous reads).
// VEC > 1 uses GCC vector extensions; columns past the last full vector and
// rows past the last full group of UNROLL take scalar / single-row loops.
#include <cstdint>
#include <cstring>

#if VEC > 1
typedef float vec_t __attribute__((vector_size(VEC * sizeof(float))));
#else
typedef float vec_t;
#endif
// memcpy: rows are only float-aligned.
static inline vec_t load_vec(const float* p) {
  vec_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void store_vec(float* p, vec_t v) { std::memcpy(p, &v, sizeof v); }

static void reduce_tile(const float* X, float* Y, int R, int C, int c0, int c1) {
  const int n = c1 - c0;
  const int nv = n / VEC * VEC;          // end of the full vectors (tile-relative)
  const int rb = R / UNROLL * UNROLL;    // end of the full row groups
  const float* base = X + c0;
#if defined(LOOP_ORDER_rc)
  float acc[TILE_C];
  for (int j = 0; j < n; ++j) acc[j] = 0.0f;
  for (int r = 0; r < rb; r += UNROLL) {
    const float* row = base + static_cast<int64_t>(r) * C;
    for (int j = 0; j < nv; j += VEC) {
      vec_t s = load_vec(acc + j);
      for (int u = 0; u < UNROLL; ++u) s += load_vec(row + static_cast<int64_t>(u) * C + j);
      store_vec(acc + j, s);
    }
    for (int j = nv; j < n; ++j) {
      float s = acc[j];
      for (int u = 0; u < UNROLL; ++u) s += row[static_cast<int64_t>(u) * C + j];
      acc[j] = s;
    }
  }
  for (int r = rb; r < R; ++r) {
    const float* row = base + static_cast<int64_t>(r) * C;
    for (int j = 0; j < n; ++j) acc[j] += row[j];
  }
  for (int j = 0; j < n; ++j) Y[c0 + j] = acc[j];
#else  // cr
  for (int j = 0; j < nv; j += VEC) {
    vec_t s[UNROLL];
    for (int u = 0; u < UNROLL; ++u) s[u] = vec_t{};
    for (int r = 0; r < rb; r += UNROLL)
      for (int u = 0; u < UNROLL; ++u) s[u] += load_vec(base + static_cast<int64_t>(r + u) * C + j);
    for (int r = rb; r < R; ++r) s[0] += load_vec(base + static_cast<int64_t>(r) * C + j);
    for (int u = 1; u < UNROLL; ++u) s[0] += s[u];
    store_vec(Y + c0 + j, s[0]);
  }
  for (int j = nv; j < n; ++j) {
    float s[UNROLL];
    for (int u = 0; u < UNROLL; ++u) s[u] = 0.0f;
    for (int r = 0; r < rb; r += UNROLL)
      for (int u = 0; u < UNROLL; ++u) s[u] += base[static_cast<int64_t>(r + u) * C + j];
    for (int r = rb; r < R; ++r) s[0] += base[static_cast<int64_t>(r) * C + j];
    for (int u = 1; u < UNROLL; ++u) s[0] += s[u];
    Y[c0 + j] = s[0];
  }
#endif
}

extern "C" void reduce_sum(const float* X, float* Y, int32_t R, int32_t C) {
#pragma omp parallel for num_threads(THREADS) schedule(static)
  for (int32_t c0 = 0; c0 < C; c0 += TILE_C)
    reduce_tile(X, Y, R, C, c0, c0 + TILE_C < C ? c0 + TILE_C : C);
}
