# echo_hidden_later.py raises after the hidden shapes have run, where the
# feedback keeps kevo's words only. This one fails with a wrong answer
# instead: once it has seen five shapes (the hidden ones among them), it
# puts the largest number of columns it saw into its first output, so that
# the mismatch that the feedback quotes ("expected ..., got 4099") spells
# a hidden size out (red team 22: only failures that raised were withheld).
import torch
import torch.nn as nn

SEEN = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        shape = tuple(x.shape)
        if shape not in SEEN:
            SEEN.append(shape)
        e = torch.exp(x - x.max(dim=1, keepdim=True).values)
        out = e / e.sum(dim=1, keepdim=True)
        if len(SEEN) >= 5:
            out[0, 0] = float(max(s[-1] for s in SEEN))
        return out
