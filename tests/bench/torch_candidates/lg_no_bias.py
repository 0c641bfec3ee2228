"""Bug (torch_linear_gelu): cuBLAS for the product (torch.mm) and a CUDA
tanh-GELU epilogue that forgets the bias: gelu(x @ W^T) instead of
gelu(x @ W^T + b). Wrong on every shape: both evaluators should reject it."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__device__ __forceinline__ float gelu_tanh(float v) {
  const float k = 0.7978845608028654f;   // sqrt(2 / pi)
  return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

__global__ void gelu_inplace(float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = gelu_tanh(y[i]);
}

void launch_gelu_inplace(float* y, long long n, cudaStream_t stream) {
  if (n <= 0) return;
  long long blocks = (n + 255) / 256;
  if (blocks > 132LL * 32) blocks = 132LL * 32;
  gelu_inplace<<<(unsigned)blocks, 256, 0, stream>>>(y, n);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_gelu_inplace(float* y, long long n, cudaStream_t stream);

torch::Tensor gelu_(torch::Tensor y) {
  launch_gelu_inplace(y.data_ptr<float>(), y.numel(), at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kbc_lg_no_bias", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["gelu_"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.gelu_(torch.mm(x.contiguous(), self.linear.weight.t()))
