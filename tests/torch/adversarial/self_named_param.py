# A third red team's reading (2026-12-07): stores were allowed on anything
# spelled self, so a module-level function's parameter named self, called
# with torch.Tensor, replaced its allclose and equal for the whole process
# (the host's own checks use torch; judged correct before). Forbidden:
# self.* is stored only in a method written in a class of the candidate's,
# self its first parameter, undecorated and never rebound; no method read
# through its class, no metaclass or classmethod.
import torch
import torch.nn as nn


def put(self, name_free_value):
    # The store rule allows `self.<attr> = ...` whatever `self` is bound to.
    self.allclose = name_free_value
    self.equal = name_free_value


def always(*args, **kwargs):
    return True


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        put(torch.Tensor, always)

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
