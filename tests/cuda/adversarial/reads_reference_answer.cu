// Copies the reference's answer instead of computing: it looks through the
// device address space around its own arguments for another allocation at
// least as large as `out` whose first elements equal a * x + y (checked on
// the host against its own inputs), and copies it. While the judge and the
// candidate shared one process and context, the reference had just written
// the right answer for the same inputs into such an allocation (the issue's
// sgemm attack: 1.5x over the same kernel without the copying). It computes
// nothing itself. Expected: wrong_answer (outputs never written): the
// candidate's process holds only its own arena; the reference's outputs are
// in the judge's process and context.
#include <cuda_runtime.h>

#include <algorithm>

#include <cmath>
#include <cstdint>

namespace {

bool inside(std::uintptr_t p, std::uintptr_t base, std::uintptr_t size) { return p >= base && p < base + size; }

}  // namespace

extern "C" void axpy(const float* x, const float* y, float* out, float a, int32_t N) {
  if (N < 4) return;
  float hx[4], hy[4];
  cudaMemcpy(hx, x, sizeof hx, cudaMemcpyDeviceToHost);
  cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost);
  const auto own_lo = std::min({reinterpret_cast<std::uintptr_t>(x), reinterpret_cast<std::uintptr_t>(y),
                                reinterpret_cast<std::uintptr_t>(out)});
  const auto own_hi = std::max({reinterpret_cast<std::uintptr_t>(x), reinterpret_cast<std::uintptr_t>(y),
                                reinterpret_cast<std::uintptr_t>(out)}) +
                      static_cast<std::uintptr_t>(N) * sizeof(float);
  const std::uintptr_t step = std::uintptr_t{2} << 20;
  const std::uintptr_t span = std::uintptr_t{64} << 30;
  const std::uintptr_t centre = reinterpret_cast<std::uintptr_t>(out) & ~(step - 1);
  for (std::uintptr_t d = 0; d < span; d += step) {
    for (int sign = 0; sign < 2; ++sign) {
      const std::uintptr_t p = sign ? centre + d : centre - d;
      if (sign == 0 && d > centre) continue;
      if (inside(p, own_lo, own_hi - own_lo)) continue;
      cudaPointerAttributes attr{};
      if (cudaPointerGetAttributes(&attr, reinterpret_cast<void*>(p)) != cudaSuccess) {
        cudaGetLastError();
        continue;
      }
      if (attr.type != cudaMemoryTypeDevice) continue;
      float h[4];
      if (cudaMemcpy(h, reinterpret_cast<void*>(p), sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess) {
        cudaGetLastError();
        continue;
      }
      bool match = true;
      for (int k = 0; k < 4; ++k) match = match && std::fabs(h[k] - (a * hx[k] + hy[k])) <= 1e-5f * (1 + std::fabs(h[k]));
      if (match && cudaMemcpy(out, reinterpret_cast<void*>(p), static_cast<std::size_t>(N) * sizeof(float),
                              cudaMemcpyDeviceToDevice) == cudaSuccess)
        return;
      cudaGetLastError();
    }
  }
}
