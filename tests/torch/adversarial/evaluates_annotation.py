# Python hidden in a string annotation: typing.get_type_hints evaluates it
# (here it reaches the os module through __import__, which the checks refuse
# as a name in the source but never see inside a string). Forbidden: the
# checks refuse typing.get_type_hints and ForwardRef, and functools'
# singledispatch (its register evaluates annotations the same way).
import typing
import torch
import torch.nn as nn


class _Hidden:
    pid: "__import__('os').getpid()"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pid = typing.get_type_hints(_Hidden)["pid"]

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
