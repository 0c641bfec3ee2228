# Computes in place into its input and returns it: the output aliases the
# input (and the input is modified).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x.sub_(x.max(dim=1, keepdim=True).values).exp_()
        x.div_(x.sum(dim=1, keepdim=True))
        return x
