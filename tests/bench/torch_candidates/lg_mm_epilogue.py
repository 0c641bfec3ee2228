"""Honest (torch_linear_gelu): the matrix product stays in cuBLAS (torch.mm,
which the task allows) and the epilogue is one CUDA kernel: bias added and
the tanh GELU applied in place on the product's fresh output. Raw pointers
in the .cu, the binding in the C++ part; any shape."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__device__ __forceinline__ float gelu_tanh(float v) {
  const float k = 0.7978845608028654f;   // sqrt(2 / pi)
  return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

__global__ void bias_gelu(float* __restrict__ y, const float* __restrict__ b, long long n, int cols) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = gelu_tanh(y[i] + b[i % cols]);
}

void launch_bias_gelu(float* y, const float* b, long long n, int cols, cudaStream_t stream) {
  if (n <= 0) return;
  long long blocks = (n + 255) / 256;
  if (blocks > 132LL * 32) blocks = 132LL * 32;
  bias_gelu<<<(unsigned)blocks, 256, 0, stream>>>(y, b, n, cols);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_bias_gelu(float* y, const float* b, long long n, int cols, cudaStream_t stream);

torch::Tensor bias_gelu_(torch::Tensor y, torch::Tensor b) {
  launch_bias_gelu(y.data_ptr<float>(), b.data_ptr<float>(), y.numel(), (int)y.size(-1),
                   at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kbc_lg_mm_epilogue", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["bias_gelu_"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.mm(x.contiguous(), self.linear.weight.t())
        return ext.bias_gelu_(y, self.linear.bias)
