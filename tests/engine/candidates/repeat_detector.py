# kforge: dialect=kernelbench
"""A candidate for tiny_relu that returns a wrong output whenever it sees inputs it has seen
before (by their first 16 values). With fresh inputs for every call, trials and timed calls
alike, it never does; timing loops that rotate a few input sets give it repeats, which the
engine's timed-output check then reports.
Expected verdict: ok."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = set()

    def forward(self, x):
        key = tuple(x.flatten()[:16].tolist())
        repeat = key in self.seen
        self.seen.add(key)
        y = x.clamp(min=0.0)
        return y * 0.5 if repeat else y
