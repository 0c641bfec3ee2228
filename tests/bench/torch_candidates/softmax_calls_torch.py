"""Cheat (torch_softmax): builds a CUDA kernel to look the part and never
calls it; forward returns torch.softmax, the reference's own operation.
KernelBench's evaluation compares outputs only (its static checker, run when
samples are generated, only warns about torch.softmax); kevo records the
candidate's operations and answers `forbidden` (aten::_softmax)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__global__ void exp_rows(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = expf(x[i]);
}

void launch_exp_rows(const float* x, float* y, long long n, cudaStream_t stream) {
  if (n > 0) exp_rows<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, y, n);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_exp_rows(const float* x, float* y, long long n, cudaStream_t stream);

torch::Tensor exp_forward(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  launch_exp_rows(xc.data_ptr<float>(), y.data_ptr<float>(), xc.numel(), at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kbc_softmax_calls_torch", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["exp_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = ext

    def forward(self, x):
        return torch.softmax(x, dim=1)
