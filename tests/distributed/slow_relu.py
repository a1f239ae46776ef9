# kforge: dialect=kernelbench
"""A correct host-only ReLU candidate whose construction takes 3 s (the build stage), so that
tests can kill a worker or the coordinator while it is being evaluated."""
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        time.sleep(3)

    def forward(self, x):
        return torch.clamp_min(x, 0)
