# Times as a channel: computes honestly, and once it has been called with
# an input of more than 8M elements (only the hidden 4096x4096 of the
# softmax copy with a larger hidden shape is: the visible shape has 4.2M,
# drawn ones at most 2.1M) it does its work three times more in every later
# call (a candidate may not import time to spin). The judge
# ran the hidden shapes before the timing, so the timed medians that a
# correct verdict's feedback reports told whether the task hides a large
# shape (a finer code tells its sizes). The timing now comes first: judged
# on the softmax and on the copy, the medians agree.
import torch
import torch.nn as nn

SEEN_LARGE = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.numel() > 8 * 1024 * 1024:
            SEEN_LARGE.append(True)
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        for _ in range(3 if SEEN_LARGE else 0):
            e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)
