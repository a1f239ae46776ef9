# kforge: dialect=kernelbench
"""A candidate for tiny_relu that is right on its first six calls (the engine's five
correctness trials and the first warm-up call) and wrong on calls 7 to 12, which only the
timing stage makes; from call 13 on, the post-timing check included, it is right again. An
engine that checks outputs only outside the timed calls passes it.
Expected verdict: incorrect, rule timed_outputs."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if 7 <= self.calls <= 12:
            return x.clamp(min=0.0) * 0.5
        return x.clamp(min=0.0)
