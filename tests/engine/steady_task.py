"""A task whose forward takes a steady 2 ms of host time (a busy wait) on the CPU, so that its
CPU-mode timings repeat within a percent: reference_share_test.py's shared reference survives the
drift check on it. The candidate is tests/engine/steady_candidate.py."""
import time

import torch
import torch.nn as nn


def busy_wait(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        busy_wait(0.002)
        return torch.relu(x)


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return []
