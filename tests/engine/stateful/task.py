"""A task whose model keeps state across forward calls, as KernelBench's level 3 RNNs do
(3_33 keeps its hidden state in a plain attribute): each call folds its input into the hidden
state and returns it scaled by the number of calls so far. A reference and a candidate agree
only when they get the same calls in the same order (docs/evaluation.md, "Timing": one call
each, in step): one extra call of either puts it a step ahead and every later output differs.
The forward also takes a steady 2 ms of host time (a busy wait, as tests/engine/steady_task.py),
so that a fork server hands its reference samples on (KFORGE_SHARE_REFERENCE=all) and the
untimed reference runs of a shared reference are exercised too."""
import time

import torch
import torch.nn as nn

n = 1024


def busy_wait(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        # A plain attribute, not a buffer: the engine does not copy it into ModelNew; both get
        # the same values from the init seed (KernelBench's weight semantics).
        self.hidden = torch.randn(n)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        busy_wait(0.002)
        self.calls += 1
        self.hidden = torch.tanh(x + 0.9 * self.hidden.to(x.device))
        return self.hidden * self.calls


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
