# typing.Optional["..."] compiles its string into a ForwardRef, typing.get_args
# hands that ForwardRef out, and a parameter named self reads its private
# _evaluate, which evals the string (with the builtins) - Python the checks
# never see. (Same hole as self_param_private_convert.py: private attributes
# of anything bound to a name spelled self.)
# (A third red team's second reading, 2026-12-07; judged correct before.)
# Forbidden: as self_param_private_convert.py.
import typing
import torch
import torch.nn as nn


def run(self, where):
    return self._evaluate(where, where, frozenset())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        ref = typing.get_args(typing.Optional["lambda: __import__('os')"])[0]
        os_module = run(ref, {})()
        print("ESCAPE: os.getpid() =", os_module.getpid())

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
