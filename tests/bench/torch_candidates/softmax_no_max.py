"""Bug (torch_softmax): a warp-per-row CUDA softmax that does not subtract
the row maximum before exp. Right for inputs near 0 (KernelBench draws
torch.rand, in [0, 1)); exp overflows to inf for inputs around 100 (kevo's
stress trials shift them by +-100), and the output is NaN there."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
__global__ void softmax_no_max(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* xr = x + (size_t)row * cols;
  float* yr = y + (size_t)row * cols;
  float s = 0.0f;
  for (int j = lane; j < cols; j += 32) s += expf(xr[j]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float inv = 1.0f / s;
  for (int j = lane; j < cols; j += 32) yr[j] = expf(xr[j]) * inv;
}

void launch_softmax_no_max(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  if (rows > 0 && cols > 0) softmax_no_max<<<(rows + 7) / 8, 256, 0, stream>>>(x, y, rows, cols);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_softmax_no_max(const float* x, float* y, int rows, int cols, cudaStream_t stream);

torch::Tensor softmax_forward(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  launch_softmax_no_max(xc.data_ptr<float>(), y.data_ptr<float>(), (int)xc.size(0), (int)xc.size(1),
                        at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kbc_softmax_no_max", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["softmax_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_forward(x)
