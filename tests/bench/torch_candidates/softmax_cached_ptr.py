"""Timing cheat (torch_softmax): an honest warp-per-row CUDA softmax behind a
cache. forward remembers its last input (a reference to the tensor, so no
other tensor can get its address while the cache holds it) and returns the
remembered output when it is called again on a tensor with the same
data_ptr and shape. KernelBench times 100 calls on one set of inputs: every
call after the first returns at once. kevo draws fresh inputs for every call
(timed ones too), so the cache never hits there and the work is timed."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cfloat>

__global__ void softmax_warp(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float* xr = x + (size_t)row * cols;
  float* yr = y + (size_t)row * cols;
  float m = -FLT_MAX;
  for (int j = lane; j < cols; j += 32) m = fmaxf(m, xr[j]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.0f;
  for (int j = lane; j < cols; j += 32) s += expf(xr[j] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  const float inv = 1.0f / s;
  for (int j = lane; j < cols; j += 32) yr[j] = expf(xr[j] - m) * inv;
}

void launch_softmax_cached(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  if (rows > 0 && cols > 0) softmax_warp<<<(rows + 7) / 8, 256, 0, stream>>>(x, y, rows, cols);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_softmax_cached(const float* x, float* y, int rows, int cols, cudaStream_t stream);

torch::Tensor softmax_forward(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  launch_softmax_cached(xc.data_ptr<float>(), y.data_ptr<float>(), (int)xc.size(0), (int)xc.size(1),
                        at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kbc_softmax_cached", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["softmax_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.last_x = None
        self.last_y = None

    def forward(self, x):
        if self.last_x is not None and x.data_ptr() == self.last_x.data_ptr() and x.shape == self.last_x.shape:
            return self.last_y
        y = ext.softmax_forward(x)
        self.last_x = x
        self.last_y = y
        return y
