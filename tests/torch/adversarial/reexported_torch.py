# A red team's second reading (2026-12-07): the forbidden torch prefixes were
# matched at the start of a chain only, and torch.nn.functional holds torch
# itself, so F.torch.load (an unpickler) and F.torch.fx passed. Forbidden:
# the prefixes are matched wherever they start, and torch reached through
# another module's attributes is refused.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        F.torch.fx.symbolic_trace(nn.Identity())

    def forward(self, x):
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
