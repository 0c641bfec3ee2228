import torch
import torch.nn as nn


class Model(nn.Module):
    """Degenerate on purpose: multiplies by zero."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return x * 0.0


n = 4096


def get_inputs():
    return [torch.rand(n)]


def get_init_inputs():
    return []
