# A class pattern's keywords are attribute lookups by name: `case
# object(__globals__=g)` binds a function's globals, with no Attribute node
# for the checks to see; from there the builtins and __import__ (judged
# correct before, its os import done). Forbidden: class patterns with
# keyword attributes are refused.
import torch
import torch.nn as nn


def _any_function():
    return None


def _import_os():
    match _any_function:
        case object(__globals__=g):
            builtins = g["__builtins__"]
    match builtins:
        case dict():
            imp = builtins["__import__"]
        case object(__import__=i):
            imp = i
    return imp("os")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pid = _import_os().getpid()

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
