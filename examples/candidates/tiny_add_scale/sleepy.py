# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_add_scale.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_add_scale ((a + b) * scale, scale = 2.0).
Correct but slow: sleeps 10 ms in every forward. Importing time is allowed; only patching it is
not.
Expected verdict: ok (slower: at least 10 ms a call)."""
import time
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        time.sleep(0.01)
        return (a + b) * self.scale
