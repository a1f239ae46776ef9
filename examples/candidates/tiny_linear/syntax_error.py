# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_linear.py with a Python syntax error (forward's def has
no
colon). Expected verdict: compile_error (the candidate's code does not build), with the
SyntaxError and its line in the log."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x)
        return torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)
