# Leaves the last column unwritten in memory from torch.empty: the judge's
# poisoned allocations make it read as NaN (or stale), never as right.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        s = e / e.sum(dim=1, keepdim=True)
        y[:, :-1] = s[:, :-1]
        return y
