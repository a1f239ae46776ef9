# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_linear.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_linear (nn.Linear(64, 32) on randn(16, 64); uses the reference's weights).
Correct: computes the task's output with different but equivalent torch ops.
Expected verdict: ok."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        return torch.einsum("mk,nk->mn", x, w) + b   # einsum instead of addmm
