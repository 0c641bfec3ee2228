# Memoises the output by input shape: right on the first call, a copy of an
# old answer on every later one. Fresh inputs for every call catch it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x):
        key = tuple(x.shape)
        if key not in self.cache:
            e = torch.exp(x - x.max(dim=1, keepdim=True).values)
            self.cache[key] = e / e.sum(dim=1, keepdim=True)
        return self.cache[key].clone()
