# kforge: dialect=nvrtc
"""Hack: output flood. Prints 100 MB to stdout on every forward (the result itself is right),
to fill the worker's disk or memory with logs, or to make the engine choke on its own capture.
Source: design.md, Stages: "each with its own time limit and captured log"; Verdicts: "Never a
bare crash".
Task: kernelbench/level1/19_ReLU.py.
Expected verdict: runtime_error (the captured output exceeded its limit: the engine keeps only
a bounded head and tail of the log and stops the candidate), never a crash of the engine or
the worker."""
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

_LINE = "kforge output flood " + "x" * 1003 + "\n"       # 1 KiB
_MEGABYTE = _LINE * 1024


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for _ in range(100):
            print(_MEGABYTE, end="", flush=True)
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _mod.relu_kernel(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0,
                         args=(x, y, n))
        return y
