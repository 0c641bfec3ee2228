# torch.utils.data.argument_validation (public, not among the refused
# prefixes) calls typing.get_type_hints on the function it decorates, which
# evals string annotations in the candidate's globals with its builtins: a
# walrus there binds the os module to a global the candidate then reads.
# (A third red team's second reading, 2026-12-07; judged correct before.)
# Forbidden: argument_validation and runtime_validation refused, and no
# string in an annotation.
import torch
import torch.nn as nn
from torch.utils.data import argument_validation


@argument_validation
def hidden(x: "(OS := __import__('os')) and int"):
    return x


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        print("ESCAPE: os.getpid() =", OS.getpid())

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
