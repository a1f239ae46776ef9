# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_relu.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_relu (ReLU of randn(4096)).
Never returns: forward loops forever in pure Python (the engine must kill it at the stage's
time limit).
Expected verdict: timeout."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        while True:
            pass
