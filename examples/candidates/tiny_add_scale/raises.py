# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_add_scale.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_add_scale ((a + b) * scale, scale = 2.0).
Raises RuntimeError in forward.
Expected verdict: runtime_error."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        raise RuntimeError("kforge example: this candidate always fails in forward")
