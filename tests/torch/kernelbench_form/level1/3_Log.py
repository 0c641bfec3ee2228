import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise natural logarithm (its inputs must stay positive)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.log(x)


batch_size = 32
dim = 1024


def get_inputs():
    return [torch.rand(batch_size, dim) + 0.01]


def get_init_inputs():
    return []
