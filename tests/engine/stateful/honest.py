"""The honest candidate of tests/engine/stateful/task.py: the same state, updated in place
(as 3_33's candidate updates its hidden state), half the busy wait.
Expected verdict: ok."""
import time

import torch
import torch.nn as nn

n = 1024


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.randn(n)  # right after the init seed, as the task's
        self.calls = 0

    def forward(self, x):
        end = time.perf_counter() + 0.001
        while time.perf_counter() < end:
            pass
        if self.hidden.device != x.device:
            self.hidden = self.hidden.to(x.device)
        self.calls += 1
        torch.tanh(torch.add(x, self.hidden, alpha=0.9), out=self.hidden)
        return self.hidden * float(self.calls)
