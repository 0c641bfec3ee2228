# An honest Triton LayerNorm: one program per row, mean and variance in
# float32, the module's own weight and bias, eps passed as a float scalar
# (the launcher's fp32 argument) and the row's length as an int.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_rows(x_ptr, w_ptr, b_ptr, y_ptr, row_stride, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * row_stride + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / cols
    inv = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * row_stride + offs, d * inv * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        with torch.no_grad():   # the reference's initialisation, draw for draw
            self.norm.weight.copy_(torch.randn(hidden))
            self.norm.bias.copy_(torch.randn(hidden))

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        block = triton.next_power_of_2(cols)
        layernorm_rows[(rows,)](x, self.norm.weight, self.norm.bias, y, x.stride(0), cols, self.norm.eps,
                                BLOCK=block, num_warps=8 if block >= 2048 else 4)
        return y
