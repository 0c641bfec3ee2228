# steers_warmup.py's slow warm-up, then answers that are off by 4 parts in
# a million (per element within the softmax task's tolerances and under the
# spot checks' median bound, but over its relative L2 bound of 1e-6: what
# lower-precision work would give) in calls 9 to 25 of a model, honest in
# call 26. Judged with max_repeats 20 and min_repeats 5: calls 1-2 are the
# warm-up, 3-8 the 5 planned pairs and their one recorded call, 9-26 the 15
# pairs a lengthened loop adds and their 3 recorded calls (one in each
# stretch of RECORD_STRIDE = 6 pairs; their count is fixed, only their
# places are drawn, and a recorded call comes before its pair), so call 26
# is the last pair's. When the loop recorded one call a stretch, this
# window moved by two and the attack was caught only where the drawn full
# check fell in it (CI, 2026-12-07).
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
        if 9 <= self.calls <= 25:
            return y * 1.000004
        return y
