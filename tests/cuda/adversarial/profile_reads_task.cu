// A correct softmax that, at every call, tries to read the task's manifest
// (its path baked in by the test in place of @TASK_JSON@: an attacker who
// guesses the repository's layout) and spells what it learnt in the grid of
// a dummy kernel, which ncu's profile quotes (the analyst's prompt, the
// feedback): 70000 + the first hidden shape's C when it found one, 3413
// when the file opened without one, 2417 when it could not be opened. The
// kernel hosts of the judge have a root of their own (2417 there); the ncu
// child runs the candidate without the system-call policy and, for a task
// with hidden shapes, under Landlock, which keeps it from the task's files
// (CudaTools.TheProfileChildReadsNoHiddenShape; unconfined, the control,
// it spells 71003).
#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void spell() {}

__global__ void softmax_kernel(const float* __restrict__ X, float* __restrict__ Y, int C) {
  const float* x = X + (long long)blockIdx.x * C;
  float* y = Y + (long long)blockIdx.x * C;
  __shared__ float red[256];
  float m = -FLT_MAX;
  for (int c = threadIdx.x; c < C; c += blockDim.x) m = fmaxf(m, x[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const float gm = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sum += expf(x[c] - gm);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.0f / red[0];
  for (int c = threadIdx.x; c < C; c += blockDim.x) y[c] = expf(x[c] - gm) * inv;
}

static unsigned learnt() {
  FILE* f = std::fopen("@TASK_JSON@", "r");
  if (!f) return 2417;
  static char text[1 << 16];
  const size_t n = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  text[n] = '\0';
  const char* h = std::strstr(text, "\"hidden\"");
  const char* c = h ? std::strstr(h, "\"C\"") : nullptr;
  if (!c) return 3413;
  c = std::strchr(c + 3, ':');
  return c ? 70000u + static_cast<unsigned>(std::atoi(c + 1)) : 3413;
}

extern "C" void softmax(const float* X, float* Y, int32_t R, int32_t C) {
  spell<<<learnt(), 1>>>();
  softmax_kernel<<<R, 256>>>(X, Y, C);
}
