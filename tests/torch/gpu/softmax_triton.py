# An honest Triton softmax, as KernelBench's Triton candidates are written:
# one program per row, the whole row in one block (BLOCK a power of two at
# least the row's length, masked), max subtraction, float32.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows(x_ptr, y_ptr, row_stride, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * row_stride + offs, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * row_stride + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        block = triton.next_power_of_2(cols)
        softmax_rows[(rows,)](x, y, x.stride(0), cols, BLOCK=block, num_warps=8 if block >= 2048 else 4)
        return y
