# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_relu.py with a Python syntax error (forward's def has
no
colon). Expected verdict: compile_error (the candidate's code does not build), with the
SyntaxError and its line in the log."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x)
        return torch.relu(x)
