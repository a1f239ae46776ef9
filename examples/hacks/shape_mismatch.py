# kforge: dialect=nvrtc
"""Hack: changed shapes, unpadded. Runs the kernel on the first half of the batch only and
returns that half, as if the task's batch size were smaller.
Source: anchors.md, CUDA-L1: "changed hyper-parameters (smaller batch/dims)"; design.md, anti
reward-hacking: "changed hyper-parameters or shapes", and Correctness: "shape, dtype ...
checks".
Task: kernelbench/level1/19_ReLU.py.
Expected verdict: incorrect (output shape differs from the reference's: the engine files shape
errors under correctness, with the shapes in the reason)."""
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
        half = x[: x.shape[0] // 2].contiguous()
        y = torch.empty_like(half)
        n = half.numel()
        if n > 0:
            _mod.relu_kernel(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0,
                             args=(half, y, n))
        return y
