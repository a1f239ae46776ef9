# kforge: dialect=kernelbench
"""For slow_inputs/task.py, whose timing rotates a few input sets: keeps the outputs of the
last three distinct inputs (keyed by pointer and first eight values) and returns the stored
output when an input comes again. The values are right; the storage is what it returned
for that set before.
Expected verdict: rejected, rule output_cache."""
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.memo = []  # (key, output), newest last

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.flatten()[:8].tolist()))
        for k, y in self.memo:
            if k == key:
                return y
        y = x.clamp(min=0.0)
        self.memo = (self.memo + [(key, y)])[-3:]
        return y
