# The operations check recorded one call, always the same: the third of the
# first model (trial 1, the repeat, then the recorded one). Counting its
# calls, this candidate composes the softmax on that one and calls the
# reference's own operation on every other, timed ones included (0.99x
# against the honest 0.48x). Every correctness call is recorded now.
# (The red team's attack.)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls = self.calls + 1
        if self.calls == 3:
            e = torch.exp(x - x.max(dim=1, keepdim=True).values)
            return e / e.sum(dim=1, keepdim=True)
        return torch.softmax(x, dim=1)
