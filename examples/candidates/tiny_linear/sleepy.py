# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_linear.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_linear (nn.Linear(64, 32) on randn(16, 64); uses the reference's weights).
Correct but slow: sleeps 10 ms in every forward. Importing time is allowed; only patching it is
not.
Expected verdict: ok (slower: at least 10 ms a call)."""
import time
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        time.sleep(0.01)
        return torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)
