"""Bug (torch_layernorm): a block-per-row CUDA LayerNorm (the mean, then the
squared deviations) that divides their sum by hidden - 1 (the unbiased
variance) where LayerNorm uses hidden. Off by a factor sqrt(hidden / (hidden - 1)):
about 2.4e-4 relative at hidden 2048, which exceeds KernelBench's 1e-4 and
kevo's 5e-4 where |y| is large; both evaluators should reject it."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__device__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = 0.0f;
  for (int i = 0; i < (int)(blockDim.x >> 5); ++i) r += red[i];
  __syncthreads();
  return r;
}

__global__ void layernorm_block(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                                float* __restrict__ y, int hidden, float eps) {
  __shared__ float red[32];
  const float* xr = x + (size_t)blockIdx.x * hidden;
  float* yr = y + (size_t)blockIdx.x * hidden;
  float s = 0.0f;
  for (int j = threadIdx.x; j < hidden; j += blockDim.x) s += xr[j];
  const float mean = block_sum(s, red) / hidden;
  float q = 0.0f;
  for (int j = threadIdx.x; j < hidden; j += blockDim.x) { const float d = xr[j] - mean; q += d * d; }
  const float rstd = rsqrtf(block_sum(q, red) / (hidden - 1) + eps);   // the bug: hidden - 1
  for (int j = threadIdx.x; j < hidden; j += blockDim.x) yr[j] = (xr[j] - mean) * rstd * w[j] + b[j];
}

void launch_layernorm_block(const float* x, const float* w, const float* b, float* y, long long rows, int hidden,
                            float eps, cudaStream_t stream) {
  if (rows > 0 && hidden > 0) layernorm_block<<<(unsigned)rows, 256, 0, stream>>>(x, w, b, y, hidden, eps);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_layernorm_block(const float* x, const float* w, const float* b, float* y, long long rows, int hidden,
                            float eps, cudaStream_t stream);

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int hidden = (int)xc.size(-1);
  launch_layernorm_block(xc.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
                         hidden > 0 ? xc.numel() / hidden : 0, hidden, (float)eps, at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kbc_ln_unbiased", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
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
