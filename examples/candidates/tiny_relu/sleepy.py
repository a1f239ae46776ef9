# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_relu.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_relu (ReLU of randn(4096)).
Correct but slow: sleeps 10 ms in every forward. Importing time is allowed; only patching it is
not.
Expected verdict: ok (slower: at least 10 ms a call)."""
import time
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        time.sleep(0.01)
        return torch.relu(x)
