"""Cheat (torch_scale_bias_relu): computes relu(x * scale + bias) correctly
but writes it into x and returns x (no output allocation). KernelBench runs
the reference on the inputs first, then the candidate, and compares the
outputs only, so it passes; kevo checks that the inputs are bitwise unchanged
after the call and that no output shares memory with an input."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__global__ void sbr_inplace(float* __restrict__ x, const float* __restrict__ scale, const float* __restrict__ bias,
                            long long n, int features) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int f = (int)(i % features);
    x[i] = fmaxf(x[i] * scale[f] + bias[f], 0.0f);
  }
}

void launch_sbr_inplace(float* x, const float* scale, const float* bias, long long n, int features,
                        cudaStream_t stream) {
  if (n <= 0) return;
  long long blocks = (n + 255) / 256;
  if (blocks > 132LL * 32) blocks = 132LL * 32;
  sbr_inplace<<<(unsigned)blocks, 256, 0, stream>>>(x, scale, bias, n, features);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_sbr_inplace(float* x, const float* scale, const float* bias, long long n, int features,
                        cudaStream_t stream);

torch::Tensor sbr_forward(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
  launch_sbr_inplace(x.data_ptr<float>(), scale.data_ptr<float>(), bias.data_ptr<float>(), x.numel(),
                     (int)x.size(-1), at::cuda::getCurrentCUDAStream());
  return x;
}
"""

ext = load_inline(name="kbc_sbr_inplace", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["sbr_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.sbr_forward(x, self.scale, self.bias)
