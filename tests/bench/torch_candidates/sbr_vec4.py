"""Honest (torch_scale_bias_relu): y = relu(x * scale + bias) in CUDA with
float4 loads and stores when features is a multiple of 4 and every pointer
is 16-byte aligned, a scalar grid-stride kernel otherwise. Raw pointers in
the .cu, the binding in the C++ part; any shape."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cstdint>

__global__ void sbr_vec4(const float4* __restrict__ x, const float4* __restrict__ scale,
                         const float4* __restrict__ bias, float4* __restrict__ y, long long n4, int f4) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const int f = (int)(i % f4);
    const float4 a = x[i], s = scale[f], b = bias[f];
    float4 r;
    r.x = fmaxf(a.x * s.x + b.x, 0.0f);
    r.y = fmaxf(a.y * s.y + b.y, 0.0f);
    r.z = fmaxf(a.z * s.z + b.z, 0.0f);
    r.w = fmaxf(a.w * s.w + b.w, 0.0f);
    y[i] = r;
  }
}

__global__ void sbr_scalar(const float* __restrict__ x, const float* __restrict__ scale,
                           const float* __restrict__ bias, float* __restrict__ y, long long n, int features) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int f = (int)(i % features);
    y[i] = fmaxf(x[i] * scale[f] + bias[f], 0.0f);
  }
}

void launch_sbr_vec4(const float* x, const float* scale, const float* bias, float* y, long long n, int features,
                     cudaStream_t stream) {
  if (n <= 0) return;
  const uintptr_t bits = (uintptr_t)x | (uintptr_t)scale | (uintptr_t)bias | (uintptr_t)y;
  const bool vec = features % 4 == 0 && bits % 16 == 0;
  const long long work = vec ? n / 4 : n;
  long long blocks = (work + 255) / 256;
  if (blocks > 132LL * 16) blocks = 132LL * 16;
  if (vec)
    sbr_vec4<<<(unsigned)blocks, 256, 0, stream>>>((const float4*)x, (const float4*)scale, (const float4*)bias,
                                                   (float4*)y, n / 4, features / 4);
  else
    sbr_scalar<<<(unsigned)blocks, 256, 0, stream>>>(x, scale, bias, y, n, features);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_sbr_vec4(const float* x, const float* scale, const float* bias, float* y, long long n, int features,
                     cudaStream_t stream);

torch::Tensor sbr_forward(torch::Tensor x, torch::Tensor scale, torch::Tensor bias) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  launch_sbr_vec4(xc.data_ptr<float>(), scale.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                  xc.numel(), (int)xc.size(-1), at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kbc_sbr_vec4", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["sbr_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return ext.sbr_forward(x, self.scale, self.bias)
