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
        # The task's own expression, so that the two agree to the bit however many calls the
        # timing makes (the output is scaled by the call count: a one-ulp difference in the
        # state grows with it).
        self.hidden.copy_(torch.tanh(x + 0.9 * self.hidden))
        return self.hidden * float(self.calls)
