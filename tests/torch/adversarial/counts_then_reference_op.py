# Honest for its first 14 calls of a model (the warm-up's two and about the
# first twelve pairs of a 20-pair timing loop), then the reference's own
# operation (forbidden) in every call. The timing loop recorded one call, at
# a random place: it fell among the honest calls more than half the time, and
# the candidate was judged correct at the reference's own speed (on the
# H200, steers_then_reference_op.py, correct at 0.67x against the honest
# 0.61x, for the same reason). Now one call in each stretch of six pairs is
# recorded, so the later part of the loop always holds one.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls = self.calls + 1
        if self.calls > 14:
            return torch.softmax(x, dim=1)
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
