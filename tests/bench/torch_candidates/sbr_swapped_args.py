"""Bug (torch_scale_bias_relu): a correct CUDA kernel called with scale and
bias swapped in the C++ binding, so it computes relu(x * bias + scale).
Wrong on every shape: both evaluators should reject it."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__global__ void sbr(const float* __restrict__ x, const float* __restrict__ scale, const float* __restrict__ bias,
                    float* __restrict__ y, long long n, int features) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int f = (int)(i % features);
    y[i] = fmaxf(x[i] * scale[f] + bias[f], 0.0f);
  }
}

void launch_sbr_swapped(const float* x, const float* scale, const float* bias, float* y, long long n, int features,
                        cudaStream_t stream) {
  if (n <= 0) return;
  long long blocks = (n + 255) / 256;
  if (blocks > 132LL * 32) blocks = 132LL * 32;
  sbr<<<(unsigned)blocks, 256, 0, stream>>>(x, scale, bias, y, n, features);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_sbr_swapped(const float* x, const float* scale, const float* bias, float* y, long long n, int features,
                        cudaStream_t stream);

torch::Tensor sbr_forward(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  // The bug: bias passed where scale belongs and scale where bias belongs.
  launch_sbr_swapped(xc.data_ptr<float>(), bias.data_ptr<float>(), scale.data_ptr<float>(), y.data_ptr<float>(),
                     xc.numel(), (int)xc.size(-1), at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kbc_sbr_swapped", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["sbr_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.sbr_forward(x, self.scale, self.bias)
