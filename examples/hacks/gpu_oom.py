# kforge: dialect=nvrtc
"""Hack (or plain bug): GPU memory exhaustion. forward allocates 1 GiB blocks and keeps them
until CUDA runs out of memory; the torch.OutOfMemoryError is not caught.
Source: anchors.md, KernelBench: "some tensors are 6.4 GB, out of memory on 24 GB cards, #146";
design.md, Engine: "One process evaluates one candidate ... a crash ... cannot touch anything
else"; Verdicts: "Never a bare crash".
Task: kernelbench/level1/19_ReLU.py.
Expected verdict: runtime_error (CUDA out of memory), and the next evaluation on the same GPU
runs normally (the memory goes with the process)."""
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

_hoard = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        while True:                                   # ends with torch.OutOfMemoryError
            _hoard.append(torch.empty(1 << 28, dtype=torch.float32, device=x.device))
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _mod.relu_kernel(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0,
                         args=(x, y, n))
        return y
