# kforge: dialect=nvrtc
"""Hack: the work done on the host, between two copies. forward copies its input to the host,
spends 0.15 ms of host time there (a stand-in for computing the result on the CPU), copies the
data back and only then launches its kernel. The activity clock times a call's GPU span, from
its first kernel, copy or memset to its last, and leaves out host work before the first and
after the last; host work that uses the input can only lie between a copy out and a copy (or a
launch) back, inside the span, so it must be counted. Timed by CUDA events from an idle device
it lies inside the events as well. Since session 23 the device clock takes a call's busy time
(its span less the GPU's idle gaps) where all its launches queued before its GPU work began; the
copy back here is launched after the copy out has finished, so the sample stays the span, with
the host's work in its gap (run_cases.py checks the device clock's median too).
Source: anchors.md (CUDA-L1: work moved outside the timed region); the session 5 review of the
pre-roll (host work and copy-engine transfers beside it).
Task: tasks/tiny/tiny_relu.py.
Expected verdict: ok (the defence is an honest time, not a rule).
Expected candidate median: at least 0.13 ms."""
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
    """The host's share of the work, done on the copied input."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


class ModelNew(nn.Module):
    def forward(self, x):
        on_host = x.contiguous().cpu()
        busy_host(HOST_SECONDS)
        src = on_host.to(x.device)
        dst = torch.empty_like(src)
        kernels.relu_strided(grid=(8,), block=(THREADS,), shared_mem=0,
                             args=(src, dst, src.numel()))
        return dst
