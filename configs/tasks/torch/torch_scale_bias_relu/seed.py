# The seed: the reference program as ModelNew (kevo judges it at about 1x).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """y = relu(x * scale + bias), with a learned per-feature scale and bias."""

    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.bias = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return torch.relu(x * self.scale + self.bias)


batch = 2048
features = 4096


def get_inputs():
    return [torch.rand(batch, features)]


def get_init_inputs():
    return [features]
