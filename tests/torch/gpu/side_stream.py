# Launches its work on a side stream and returns without waiting: a timer
# that only syncs the current stream would see nothing. kevo's host does a
# device-wide synchronize before it answers, so it is timed honestly.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stream = torch.cuda.Stream()

    def forward(self, x):
        with torch.cuda.stream(self.stream):
            e = torch.exp(x - x.max(dim=1, keepdim=True).values)
            y = e / e.sum(dim=1, keepdim=True)
        return y
