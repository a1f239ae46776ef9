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
extern "C" __global__ void relu_strided(const float* __restrict__ src, float* __restrict__ dst,
                                        long long count) {
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < count;
         k += (long long)gridDim.x * blockDim.x) {
        dst[k] = fmaxf(src[k], 0.f);
    }
}
'''
THREADS = 128
HOST_SECONDS = 0.00015
kernels = cuda.compile(SRC)


def busy_host(seconds):
    """The host's share of the work, done before anything is launched."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


class ModelNew(nn.Module):
    def forward(self, x):
        busy_host(HOST_SECONDS)
        src = x.contiguous()
        dst = torch.empty_like(src)
        kernels.relu_strided(grid=(8,), block=(THREADS,), shared_mem=0,
                             args=(src, dst, src.numel()))
        return dst
