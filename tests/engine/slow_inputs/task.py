"""tiny_relu whose get_inputs() takes 30 ms (host work standing in for inputs built on the
host): too slow for fresh inputs in every timing iteration, so the engine rotates a few
input sets (docs/evaluation.md, "Timing")."""
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


n = 4096


def get_inputs():
    time.sleep(0.03)
    return [torch.randn(n)]


def get_init_inputs():
    return []
