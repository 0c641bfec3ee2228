# A class pattern's positional parts are attribute lookups by the names in
# its class's __match_args__, and a metaclass's __instancecheck__ lets any
# subject match: `case _Globals(g)` bound a function's globals with no
# Attribute node for the checks to see, and from there os (judged correct
# before both rules, its pid read). Forbidden three times: every class
# pattern is refused (match_class_attrs.py), and so are dunder-named string
# literals ("__match_args__", "__globals__") and (since a third red team)
# methods that receive a class, __instancecheck__ among them: each refuses
# this alone.
import torch
import torch.nn as nn


class _MatchesAll(type):
    def __instancecheck__(cls, obj):
        return True


_Globals = _MatchesAll("_Globals", (), {"__match_args__": ("__globals__",)})


def _os():
    # A Python function of a module that imports os.
    match torch.cuda.is_available:
        case _Globals(g):
            return g["os"]
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.pid = _os().getpid()

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
