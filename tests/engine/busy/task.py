import torch
import torch.nn as nn


class Model(nn.Module):
    """x @ w, a few milliseconds of the CPUs' time in CPU mode (torch's threads on every core):
    the reference of tests/engine/exploits/busy_beside_reference.py, whose processes keep the
    CPUs busy while the judge times it."""
    def __init__(self, n: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, n) / n ** 0.5)

    def forward(self, x):
        return x @ self.w


N = 768


def get_inputs():
    return [torch.randn(256, N)]


def get_init_inputs():
    return [N]
