# Honest: softmax from other operations (max, sub, exp, sum, div), not the
# reference's own aten::_softmax. The control: judged correct.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
