# A Triton row softmax as its author wrote it before kevo: autotuned over
# rows per program and warps (tests/torch/triton_space_test.py reads its
# configurations with `kevo tasks triton-space`; nothing here runs).
import torch
import torch.nn as nn
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"ROWS_PER": 1}, num_warps=4),
    triton.Config({"ROWS_PER": 1}, num_warps=8),
    triton.Config({"ROWS_PER": 2}, num_warps=4),
    triton.Config({"ROWS_PER": 4}, num_warps=2, num_stages=2),
    triton.Config({"ROWS_PER": 2}, num_warps=4),
]


@triton.autotune(configs=CONFIGS, key=["cols"])
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
        grid = lambda meta: (triton.cdiv(rows, meta["ROWS_PER"]),)  # noqa: E731
        softmax_rows[grid](x, y, x.stride(0), rows, cols, BLOCK=triton.next_power_of_2(cols))
        return y


rows = 4096
cols = 2048


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
