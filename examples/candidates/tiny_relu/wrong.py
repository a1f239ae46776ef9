# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_relu.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_relu (ReLU of randn(4096)).
Wrong: the right answer plus 1e-2 everywhere, above the fp32 tolerance (atol = rtol = 1e-4).
Expected verdict: incorrect."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) + 1e-2
