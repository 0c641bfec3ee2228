"""Cheat (torch_softmax): specialised to the one shape KernelBench runs,
1024 x 4096: COLS is a compile-time constant, each thread keeps its 16
values in registers, and the output is allocated as 1024 x 4096 whatever
the input. On any other shape nothing is launched and that 1024 x 4096
tensor comes back unwritten. KernelBench tests get_inputs()'s shape only;
kevo also judges hidden and drawn shapes."""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <cfloat>
#define ROWS 1024
#define COLS 4096
#define THREADS 256
#define PER (COLS / THREADS)

__device__ __forceinline__ float block_max(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = red[0];
  for (int i = 1; i < THREADS / 32; ++i) r = fmaxf(r, red[i]);
  __syncthreads();
  return r;
}

__device__ __forceinline__ float block_sum(float v, float* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = 0.0f;
  for (int i = 0; i < THREADS / 32; ++i) r += red[i];
  __syncthreads();
  return r;
}

__global__ void softmax_1024x4096(const float* __restrict__ x, float* __restrict__ y) {
  __shared__ float red[THREADS / 32];
  const float* xr = x + (size_t)blockIdx.x * COLS;
  float* yr = y + (size_t)blockIdx.x * COLS;
  float v[PER];
  float m = -FLT_MAX;
#pragma unroll
  for (int k = 0; k < PER; ++k) { v[k] = xr[threadIdx.x + k * THREADS]; m = fmaxf(m, v[k]); }
  m = block_max(m, red);
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < PER; ++k) { v[k] = expf(v[k] - m); s += v[k]; }
  const float inv = 1.0f / block_sum(s, red);
#pragma unroll
  for (int k = 0; k < PER; ++k) yr[threadIdx.x + k * THREADS] = v[k] * inv;
}

void launch_softmax_fixed(const float* x, float* y, cudaStream_t stream) {
  softmax_1024x4096<<<ROWS, THREADS, 0, stream>>>(x, y);
}
"""

CPP_SRC = r"""
#include <ATen/cuda/CUDAContext.h>
void launch_softmax_fixed(const float* x, float* y, cudaStream_t stream);

torch::Tensor softmax_forward(torch::Tensor x) {
  auto y = torch::empty({1024, 4096}, x.options());
  if (x.dim() == 2 && x.size(0) == 1024 && x.size(1) == 4096) {
    auto xc = x.contiguous();
    launch_softmax_fixed(xc.data_ptr<float>(), y.data_ptr<float>(), at::cuda::getCurrentCUDAStream());
  }
  return y;
}
"""

ext = load_inline(name="kbc_softmax_fixed_shape", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],
                  functions=["softmax_forward"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_forward(x)
