# functools.update_wrapper copies the attributes that its `assigned` names,
# by strings, from one object to another: with a wrapper whose __setattr__
# keeps what it is given, that is getattr by name, dunders included. Here
# it takes a function's __globals__, then the builtins in it, then
# __import__, and imports os, which the checks refuse in the source (judged
# correct before, its import done). Forbidden: update_wrapper and wraps only
# with their default attributes.
import functools
import torch
import torch.nn as nn

_GOT = []


class _Keep:
    def __setattr__(self, name, value):
        _GOT.append(value)


def _any_function():
    return None


def _take(obj, name):
    del _GOT[:]
    functools.update_wrapper(_Keep(), obj, assigned=(name,), updated=())
    return _GOT[0]


def _import_os():
    builtins = _take(_any_function, "__globals__")["__builtins__"]
    imp = builtins["__import__"] if isinstance(builtins, dict) else _take(builtins, "__import__")
    return imp("os")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pid = _import_os().getpid()

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
