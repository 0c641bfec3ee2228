// Reference for stencil2d: 3x3 weighted stencil (a 2-D cross-correlation) on
// an H x W row-major float32 grid with zero padding: neighbours outside the
// grid count as 0. Accumulated in double, taps in row-major weight order.
#include <cstdint>

extern "C" void stencil2d(const float* in, const float* w, float* out, int32_t H, int32_t W) {
  for (int64_t i = 0; i < H; ++i) {
    for (int64_t j = 0; j < W; ++j) {
      double acc = 0.0;
      for (int64_t a = 0; a < 3; ++a) {
        for (int64_t b = 0; b < 3; ++b) {
          const int64_t y = i + a - 1, x = j + b - 1;
          if (y < 0 || y >= H || x < 0 || x >= W) continue;
          acc += static_cast<double>(w[a * 3 + b]) * in[y * W + x];
        }
      }
      out[i * W + j] = static_cast<float>(acc);
    }
  }
}
