# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_linear.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_linear (nn.Linear(64, 32) on randn(16, 64); uses the reference's weights).
Wrong: the right answer plus 1e-2 everywhere, above the fp32 tolerance (atol = rtol = 1e-4).
Expected verdict: incorrect."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.linear(x, self.linear.weight, self.linear.bias) + 1e-2
