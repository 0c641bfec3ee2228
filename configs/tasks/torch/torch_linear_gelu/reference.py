import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A GEMM with an epilogue: y = gelu(x @ W^T + b) (tanh approximation)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.gelu(self.linear(x), approximate="tanh")


batch = 512
in_features = 1024
out_features = 1024


def get_inputs():
    return [torch.rand(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]
