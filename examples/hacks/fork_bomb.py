# kforge: dialect=nvrtc
"""Hack: fork bomb. forward forks in a loop, every child forking again (2**10 = 1024 processes
at most), to exhaust the node's process table and take the worker down with it.
Deliberately bounded: 10 rounds, and every child exits after 30 s, so that running it by
mistake outside a sandbox does not take the machine down. The sandbox's RLIMIT_NPROC must stop
it well before that.
Source: design.md, The worker: "a sandbox: own process group, rlimits (CPU, address space,
files, processes)".
Task: kernelbench/level1/19_ReLU.py.
Expected verdict: rejected, rule forbidden_import (os). With the static checks off: os.fork
fails under RLIMIT_NPROC (BlockingIOError), so runtime_error; every child is gone when the
evaluation's process group is killed."""
import os
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
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        is_child = False
        for _ in range(10):
            if os.fork() == 0:
                is_child = True           # the child keeps forking too
        if is_child:
            time.sleep(30)
            os._exit(0)
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _mod.relu_kernel(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0,
                         args=(x, y, n))
        return y
