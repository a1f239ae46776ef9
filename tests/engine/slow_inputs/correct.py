# kforge: dialect=kernelbench
"""Correct for slow_inputs/task.py (ReLU): timed on rotating input sets.
Expected verdict: ok."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp(min=0.0)
