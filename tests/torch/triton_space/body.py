# The same kernel as autotuned.py written for kevo: no @triton.autotune, the
# launch given the constants of the "# kevo:params" block that
# tests/torch/triton_space_test.py puts above this text.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows(x_ptr, y_ptr, stride, rows, cols, BLOCK: tl.constexpr, ROWS_PER: tl.constexpr):
    first = tl.program_id(0) * ROWS_PER
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    for r in tl.static_range(ROWS_PER):
        row = first + r
        if row < rows:
            x = tl.load(x_ptr + row * stride + offs, mask=mask, other=-float("inf"))
            x = x - tl.max(x, axis=0)
            e = tl.exp(x)
            tl.store(y_ptr + row * stride + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        softmax_rows[(triton.cdiv(rows, ROWS_PER),)](x, y, x.stride(0), rows, cols,
                                                     BLOCK=triton.next_power_of_2(cols), ROWS_PER=ROWS_PER,
                                                     num_warps=NUM_WARPS, num_stages=NUM_STAGES)
        return y


rows = 4096
cols = 2048


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
