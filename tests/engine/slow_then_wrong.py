# kforge: dialect=kernelbench
"""The candidate of slow_stop_test.py: a ReLU that sleeps 10 ms a call, so that the slow stop
ends its sampling after 5 pairs, and answers zeros from call KFORGE_TEST_WRONG_AFTER + 1 on:
it bets that the calls the slow stop leaves out are the ones it would be caught in."""
import os
import time

import torch
import torch.nn as nn

WRONG_AFTER = int(os.environ.get("KFORGE_TEST_WRONG_AFTER", "13"))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > WRONG_AFTER:
            return torch.zeros_like(x)
        time.sleep(0.01)
        return torch.relu(x)
