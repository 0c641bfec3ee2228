"""Honest (torch_layernorm): one warp per row in CUDA (8 rows per block),
two passes for the statistics (mean, then mean of squared deviations) by
warp shuffles, a third to write. Raw pointers in the .cu, the binding in
the C++ part; any shape."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void layernorm_warp(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                               float* __restrict__ y, long long rows, int hidden, float eps) {
  const long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* xr = x + row * hidden;
  float* yr = y + row * hidden;
  float s = 0.0f;
  for (int j = lane; j < hidden; j += 32) s += xr[j];
  const float mean = warp_sum(s) / hidden;
  float q = 0.0f;
  for (int j = lane; j < hidden; j += 32) { const float d = xr[j] - mean; q += d * d; }
  const float rstd = rsqrtf(warp_sum(q) / hidden + eps);
  for (int j = lane; j < hidden; j += 32) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
}

void launch_layernorm_warp(const float* x, const float* w, const float* b, float* y, long long rows, int hidden,
                           float eps, cudaStream_t stream) {
  if (rows > 0 && hidden > 0)
    layernorm_warp<<<(unsigned)((rows + 7) / 8), 256, 0, stream>>>(x, w, b, y, rows, hidden, eps);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_layernorm_warp(const float* x, const float* w, const float* b, float* y, long long rows, int hidden,
                           float eps, cudaStream_t stream);

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int hidden = (int)xc.size(-1);
  launch_layernorm_warp(xc.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
                        hidden > 0 ? xc.numel() / hidden : 0, hidden, (float)eps, at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kbc_ln_warp", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["layernorm_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.copy_(torch.randn(hidden))
            self.norm.bias.copy_(torch.randn(hidden))

    def forward(self, x):
        return ext.layernorm_forward(x, self.norm.weight, self.norm.bias, 1e-5)
