"""Bug (torch_softmax): a block-per-row CUDA softmax that walks each row in
groups of 4 columns and forgets the cols % 4 columns at the end: they are
neither read nor written. Right when cols is a multiple of 4 (KernelBench's
only shape, 1024 x 4096); wrong on kevo's hidden shapes (7 x 1001, ...)."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cfloat>

__device__ float block_reduce(float v, bool is_max, float* red) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = is_max ? -FLT_MAX : 0.0f;
  for (int i = 0; i < (int)(blockDim.x >> 5); ++i) r = is_max ? fmaxf(r, red[i]) : r + red[i];
  __syncthreads();
  return r;
}

__global__ void softmax_quads(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float red[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* yr = y + (size_t)blockIdx.x * cols;
  const int quads = cols / 4;   // the bug: the last cols % 4 columns are left out
  float m = -FLT_MAX;
  for (int q = threadIdx.x; q < quads; q += blockDim.x) {
    const float* p = xr + 4 * q;
    m = fmaxf(m, fmaxf(fmaxf(p[0], p[1]), fmaxf(p[2], p[3])));
  }
  m = block_reduce(m, true, red);
  float s = 0.0f;
  for (int q = threadIdx.x; q < quads; q += blockDim.x) {
    const float* p = xr + 4 * q;
    s += expf(p[0] - m) + expf(p[1] - m) + expf(p[2] - m) + expf(p[3] - m);
  }
  const float inv = 1.0f / block_reduce(s, false, red);
  for (int q = threadIdx.x; q < quads; q += blockDim.x)
    for (int k = 0; k < 4; ++k) yr[4 * q + k] = expf(xr[4 * q + k] - m) * inv;
}

void launch_softmax_quads(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  if (rows > 0 && cols > 0) softmax_quads<<<rows, 256, 0, stream>>>(x, y, cols);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_softmax_quads(const float* x, float* y, int rows, int cols, cudaStream_t stream);

torch::Tensor softmax_forward(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  launch_softmax_quads(xc.data_ptr<float>(), y.data_ptr<float>(), (int)xc.size(0), (int)xc.size(1),
                       at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kbc_softmax_tail4", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["softmax_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_forward(x)
