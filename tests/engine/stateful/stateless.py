"""A candidate of tests/engine/stateful/task.py that keeps no state: every call starts from the
initial hidden state and counts one call. Right on the first call only, so the second
correctness trial fails: the control that shows the task's state matters.
Expected verdict: incorrect."""
import torch
import torch.nn as nn

n = 1024


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.randn(n)

    def forward(self, x):
        return torch.tanh(x + 0.9 * self.hidden.to(x.device))
