# The seed: the reference program as ModelNew (kevo judges it at about 1x).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """LayerNorm over the last dimension, with a learned weight and bias."""

    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.copy_(torch.randn(hidden))
            self.norm.bias.copy_(torch.randn(hidden))

    def forward(self, x):
        return self.norm(x)


tokens = 2048
hidden = 2048


def get_inputs():
    return [torch.rand(tokens, hidden)]


def get_init_inputs():
    return [hidden]
