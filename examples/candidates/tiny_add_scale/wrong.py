# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_add_scale.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_add_scale ((a + b) * scale, scale = 2.0).
Wrong: the right answer plus 1e-2 everywhere, above the fp32 tolerance (atol = rtol = 1e-4).
Expected verdict: incorrect."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return (a + b) * self.scale + 1e-2
