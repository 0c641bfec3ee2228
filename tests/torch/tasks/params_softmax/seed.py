"""Row softmax, CHUNK rows at a time: a seed whose parameters kevo's
parameter operators set (tests/torch/params_test.py). The block stays after
the docstring and the __future__ import, where it is written."""
from __future__ import annotations

# kevo:params begin
CHUNK = 64
SHIFT = "max"
# kevo:params end

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        parts = []
        for start in range(0, x.shape[0], CHUNK):
            part = x[start:start + CHUNK]
            if SHIFT == "max":
                part = part - part.amax(dim=1, keepdim=True)
            e = torch.exp(part)
            parts.append(e / e.sum(dim=1, keepdim=True))
        return torch.cat(parts)


rows = 256
cols = 512


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
