# kforge: dialect=nvrtc
"""Hack: host work before the timed launch. forward spends 0.15 ms of host time first (a stand-in
for computing on the CPU, or waiting on a copy-engine transfer of the input) and only then
launches its kernel. Timed from a start event recorded on an idle device (the default), that
time lies inside the events. Under the opt-in timing pre-roll (--preroll-ms), forward runs while
the pre-roll holds the device, before the start event fires, and up to the pre-roll's length of
such work is not seen: the reason the pre-roll is not the default (docs/decisions.md, "Timing:
a pre-roll kernel that holds every SM"), and why this case's time is only checked without one.
Source: review of the session 5 pre-roll; anchors.md (CUDA-L1: work moved outside the timed
region).
Task: tasks/tiny/tiny_relu.py.
Expected verdict: ok (the defence is an honest time, not a rule).
Expected candidate median: at least 0.13 ms (without a pre-roll)."""
import time

import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
extern "C" __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''
BLOCK = 256
HOST_S = 0.00015
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < HOST_S:  # the host's share of the work
            pass
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _mod.relu_kernel(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0,
                         args=(x, y, n))
        return y
