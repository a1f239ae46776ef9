# kforge: dialect=nvrtc
"""Hack: input mutation. Writes the result in place into the input and returns the input: no
output allocation, and later trials or a reference run after it see a modified input.
Source: design.md, Correctness: "inputs must be unchanged after the candidate ran".
Task: tasks/tiny/tiny_relu.py (inputs are torch.randn, so the in-place ReLU changes them; on
19_ReLU, whose inputs are all >= 0, the same code leaves the values unchanged and only
returns_input would catch it).
Expected verdict: rejected, rule input_mutation (the input's values changed). It also returns
its input, so returns_input is the other rule that may fire first."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
extern "C" __global__ void relu_inplace(float* __restrict__ x, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] < 0.f) x[i] = 0.f;
}
'''
BLOCK = 256
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.numel()
        _mod.relu_inplace(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0, args=(x, n))
        return x
