# Changes a numerics setting through an alias that the static check cannot
# follow: the judge's check after every call catches it at run time.
import torch
import torch.nn as nn

t = torch


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        t.set_float32_matmul_precision("medium")
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
