# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_relu.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_relu (ReLU of randn(4096)).
Raises RuntimeError in forward.
Expected verdict: runtime_error."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        raise RuntimeError("kforge example: this candidate always fails in forward")
