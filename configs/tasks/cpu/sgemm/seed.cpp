// kevo:params begin
#define TILE_M 16
#define TILE_N 16
#define TILE_K 16
#define LOOP_ORDER_ijk 1
#define LOOP_ORDER "ijk"
#define VEC 1
#define THREADS 1
// kevo:params end
// sgemm: C = A @ B for row-major float32 matrices (A is M x K, B is K x N,
// C is M x N), blocked into TILE_M x TILE_N x TILE_K tiles.
//
// Inside a tile LOOP_ORDER picks the loop nest:
//   "ijk"  keeps VEC adjacent elements of a row of C in a register while
//          walking k (one dot product per lane),
//   "ikj"  walks k outside and updates VEC adjacent elements of a row of C
//          per step (an axpy with a row of B).
// VEC > 1 uses GCC vector extensions; columns past the last full vector of a
// tile (N or TILE_N not a multiple of VEC) take the scalar path, so every
// shape is handled. Row blocks of TILE_M rows are shared among THREADS
// OpenMP threads; each thread owns whole rows of C, so there is no race.
#include <cstdint>
#include <cstring>

#if VEC > 1
typedef float vfloat __attribute__((vector_size(VEC * sizeof(float))));
// memcpy: rows of B and C are only float-aligned.
static inline vfloat load_vec(const float* p) {
  vfloat v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
static inline void store_vec(float* p, vfloat v) { std::memcpy(p, &v, sizeof v); }
#endif

static inline int min_int(int a, int b) { return a < b ? a : b; }

// C[i0:i1, j0:j1] += A[i0:i1, k0:k1] @ B[k0:k1, j0:j1]
static void tile(const float* A, const float* B, float* C, int N, int K,
                 int i0, int i1, int j0, int j1, int k0, int k1) {
#if VEC > 1
  const int jv = j0 + (j1 - j0) / VEC * VEC;  // end of the full vectors
#else
  const int jv = j0;                          // all columns take the scalar path
#endif
  for (int i = i0; i < i1; ++i) {
    const float* a = A + static_cast<int64_t>(i) * K;
    float* c = C + static_cast<int64_t>(i) * N;
#if defined(LOOP_ORDER_ijk)
#if VEC > 1
    for (int j = j0; j < jv; j += VEC) {
      vfloat acc = load_vec(c + j);
      for (int k = k0; k < k1; ++k) acc += a[k] * load_vec(B + static_cast<int64_t>(k) * N + j);
      store_vec(c + j, acc);
    }
#endif
    for (int j = jv; j < j1; ++j) {
      float acc = c[j];
      for (int k = k0; k < k1; ++k) acc += a[k] * B[static_cast<int64_t>(k) * N + j];
      c[j] = acc;
    }
#else  // ikj
    for (int k = k0; k < k1; ++k) {
      const float aik = a[k];
      const float* b = B + static_cast<int64_t>(k) * N;
#if VEC > 1
      for (int j = j0; j < jv; j += VEC) store_vec(c + j, load_vec(c + j) + aik * load_vec(b + j));
#endif
      for (int j = jv; j < j1; ++j) c[j] += aik * b[j];
    }
#endif
  }
}

extern "C" void sgemm(const float* A, const float* B, float* C, int32_t M, int32_t N, int32_t K) {
#pragma omp parallel for num_threads(THREADS) schedule(static)
  for (int i0 = 0; i0 < M; i0 += TILE_M) {
    const int i1 = min_int(i0 + TILE_M, M);
    // C is an output only: it holds garbage on entry.
    for (int i = i0; i < i1; ++i)
      for (int j = 0; j < N; ++j) C[static_cast<int64_t>(i) * N + j] = 0.0f;
    for (int j0 = 0; j0 < N; j0 += TILE_N) {
      const int j1 = min_int(j0 + TILE_N, N);
      for (int k0 = 0; k0 < K; k0 += TILE_K) {
        tile(A, B, C, N, K, i0, i1, j0, j1, k0, min_int(k0 + TILE_K, K));
      }
    }
  }
}
