# Changes a numerics setting through an alias of the torch module: the
# static check follows a name bound to a module like an import alias (and
# refuses a module used as a value). From C++, where no static check sees
# it, native_change_numerics is caught by the judge's check of the settings
# after every call.
import torch
import torch.nn as nn

t = torch


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        t.set_float32_matmul_precision("medium")
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
