# An honest CUDA softmax through load_inline, in the form kevo's prompts ask
# for: raw pointers in the .cu (no torch headers there), the tensor binding
# in the C++ part. One block per row, two passes (max, then sum), float32.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cfloat>

__device__ float block_reduce(float v, bool is_max, float* red) {
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? red[lane] : (is_max ? -FLT_MAX : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
      float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
    if (lane == 0) red[0] = v;
  }
  __syncthreads();
  v = red[0];
  __syncthreads();
  return v;
}

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float red[32];
  const float* xr = x + (size_t)blockIdx.x * cols;
  float* yr = y + (size_t)blockIdx.x * cols;
  float m = -FLT_MAX;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j]);
  m = block_reduce(m, true, red);
  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) s += __expf(xr[j] - m);
  s = block_reduce(s, false, red);
  const float inv = 1.0f / s;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = __expf(xr[j] - m) * inv;
}

void launch_softmax(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
  if (rows > 0 && cols > 0) softmax_rows<<<rows, 256, 0, stream>>>(x, y, cols);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_softmax(const float* x, float* y, int rows, int cols, cudaStream_t stream);

torch::Tensor softmax_forward(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  launch_softmax(xc.data_ptr<float>(), y.data_ptr<float>(), (int)xc.size(0), (int)xc.size(1),
                 at::cuda::getCurrentCUDAStream());
  return y;
}
"""

ext = load_inline(name="kevo_softmax_cuda", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["softmax_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_forward(x)
