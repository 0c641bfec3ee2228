import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Degenerate on purpose: relu(x) - relu(x) is zero whatever x is, so the
    null candidate "zeros" matches it and kevo must refuse the task."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) - torch.relu(x)


n = 4096


def get_inputs():
    return [torch.rand(n)]


def get_init_inputs():
    return []
