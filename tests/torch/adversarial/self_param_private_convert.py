# A parameter named self (any function, not a method) lets private attributes
# be read of whatever it is bound to: enum.IntEnum._convert_ reads any loaded
# module's globals by its name.
# (A third red team's second reading, 2026-12-07; judged correct before.)
# Forbidden: private attributes are read only of a method's own self.
import enum
import torch
import torch.nn as nn


def reach(self):
    return self._convert_("X", "os", lambda n: n == "sep")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        # A value of os's namespace (os.getpid, a function, became a method
        # of the enum in the judge's host, not a member).
        self.sep = reach(enum.Enum).sep.value

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
