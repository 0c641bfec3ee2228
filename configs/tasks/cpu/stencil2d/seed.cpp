// kevo:params begin
#define THREADS 1
#define TILE_H 4
#define BORDER_check 1
#define BORDER "check"
#define VEC 1
#define ROWS 1
// kevo:params end
// stencil2d: 3x3 weighted stencil on an H x W row-major float32 grid with
// zero padding (neighbours outside the grid count as 0):
//   out[i][j] = sum_{a,b in 0..2} w[a][b] * in[i + a - 1][j + b - 1]
//
// Parameters:
//   THREADS  OpenMP threads; blocks of TILE_H rows are split statically.
//   TILE_H   rows per block handed to a thread.
//   BORDER   "check": every point tests its 9 neighbours against the grid
//            bounds (simple, scalar); "peel": only the first/last row and
//            column are computed with checks, the interior runs check-free
//            and vectorised.
//   VEC      lanes per GCC vector-extension vector in the interior (1 = float).
//   ROWS     output rows computed together in the interior so each loaded
//            input row serves up to 3 of them.
// (VEC and ROWS only matter for "peel".) Rows that do not fill a group of
// ROWS and columns past the last full vector take narrower paths, so every
// H and W is handled.
#include <cstdint>
#include <cstring>

#if VEC > 1
typedef float vec_t __attribute__((vector_size(VEC * sizeof(float))));
#else
typedef float vec_t;
#endif
// memcpy: grid rows are only float-aligned.
static inline vec_t load_vec(const float* p) {
  vec_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void store_vec(float* p, vec_t v) { std::memcpy(p, &v, sizeof v); }

static inline float point_checked(const float* in, const float* w, int H, int W, int i, int j) {
  float s = 0.0f;
  for (int a = 0; a < 3; ++a) {
    const int y = i + a - 1;
    if (y < 0 || y >= H) continue;
    for (int b = 0; b < 3; ++b) {
      const int x = j + b - 1;
      if (x < 0 || x >= W) continue;
      s += w[a * 3 + b] * in[static_cast<int64_t>(y) * W + x];
    }
  }
  return s;
}

#if defined(BORDER_peel)
// NR output rows i .. i+NR-1, all with both neighbour rows inside the grid.
template <int NR>
static void interior_rows(const float* in, const float* w, float* out, int H, int W, int i) {
  float k[9];
  for (int t = 0; t < 9; ++t) k[t] = w[t];
  for (int r = 0; r < NR; ++r) {
    out[static_cast<int64_t>(i + r) * W] = point_checked(in, w, H, W, i + r, 0);
    if (W > 1) out[static_cast<int64_t>(i + r) * W + W - 1] = point_checked(in, w, H, W, i + r, W - 1);
  }
  const float* top = in + static_cast<int64_t>(i - 1) * W;  // first input row used
  int j = 1;
  for (; j + VEC <= W - 1; j += VEC) {
    vec_t acc[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) acc[r] = vec_t{};
#pragma GCC unroll 8
    for (int q = 0; q < NR + 2; ++q) {  // input row i - 1 + q
      const float* p = top + static_cast<int64_t>(q) * W + j;
      const vec_t l = load_vec(p - 1), c = load_vec(p), rr = load_vec(p + 1);
#pragma GCC unroll 3
      for (int a = 0; a < 3; ++a) {  // feeds output row q - a through weight row a
        const int o = q - a;
        if (o < 0 || o >= NR) continue;
        acc[o] += k[a * 3] * l + k[a * 3 + 1] * c + k[a * 3 + 2] * rr;
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) store_vec(out + static_cast<int64_t>(i + r) * W + j, acc[r]);
  }
  for (; j < W - 1; ++j) {  // interior columns past the last full vector
    for (int r = 0; r < NR; ++r) {
      const float* p = top + static_cast<int64_t>(r) * W + j;
      float s = 0.0f;
      for (int a = 0; a < 3; ++a)
        s += k[a * 3] * p[a * W - 1] + k[a * 3 + 1] * p[a * W] + k[a * 3 + 2] * p[a * W + 1];
      out[static_cast<int64_t>(i + r) * W + j] = s;
    }
  }
}
#endif

static void row_block(const float* in, const float* w, float* out, int H, int W, int i0, int i1) {
#if defined(BORDER_check)
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < W; ++j) out[static_cast<int64_t>(i) * W + j] = point_checked(in, w, H, W, i, j);
#else
  int i = i0;
  while (i < i1) {
    if (i == 0 || i == H - 1) {  // a missing neighbour row: checked path
      for (int j = 0; j < W; ++j) out[static_cast<int64_t>(i) * W + j] = point_checked(in, w, H, W, i, j);
      ++i;
    } else if (i + ROWS <= i1 && i + ROWS <= H - 1) {
      interior_rows<ROWS>(in, w, out, H, W, i);
      i += ROWS;
    } else {
      interior_rows<1>(in, w, out, H, W, i);
      ++i;
    }
  }
#endif
}

extern "C" void stencil2d(const float* in, const float* w, float* out, int32_t H, int32_t W) {
#pragma omp parallel for num_threads(THREADS) schedule(static)
  for (int32_t i0 = 0; i0 < H; i0 += TILE_H)
    row_block(in, w, out, H, W, i0, i0 + TILE_H < H ? i0 + TILE_H : H);
}
