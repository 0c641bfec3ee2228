# steers_warmup.py's slow warm-up, then answers that are off by 4 parts in
# a million (per element within the softmax task's tolerances and under the
# spot checks' median bound, but over its relative L2 bound of 1e-6: what
# lower-precision work would give) in calls 9
# to 23 of a model, honest in call 24. Judged with max_repeats 20 and
# min_repeats 5, those are the pairs a lengthened loop adds, but its last.
# On the CPU a timed pair is compared in full only at two places drawn
# before the loop (and the last): the pairs added by the lengthening were
# only spot-checked, per element (the red team's finding). The lengthened
# part now has a full check of its own at a random place.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls = self.calls + 1
        rounds = 100 if self.calls <= 2 else 1
        for _ in range(rounds):
            e = torch.exp(x - x.max(dim=1, keepdim=True).values)
            y = e / e.sum(dim=1, keepdim=True)
        if 9 <= self.calls <= 23:
            return y * 1.000004
        return y
