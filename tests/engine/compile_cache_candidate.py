# kforge: dialect=kernelbench
"""For cache_isolation_test.py: a ReLU that, like torch.compile, writes into the caches the
environment names for Inductor and Triton (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR): the
writes must land in its own namespace (<cache>/c/<key>/torch_compile/), where the lock lets
them through. (torch.compile itself takes 40-90 s a process on a 2-core CPU: too slow for CI.)"""
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        for var in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
            os.makedirs(os.environ[var], exist_ok=True)
            with open(os.path.join(os.environ[var], "entry"), "w") as f:
                f.write(var)

    def forward(self, x):
        return torch.relu(x)
