# kforge: dialect=nvrtc
"""Bug class: hung kernel. Every thread of the kernel spins forever in a `while (true)` loop
(with a clock read and a nanosleep in it, so the compiler cannot remove the loop). The launch
returns at once; the process then blocks in the next synchronisation.
Source: design.md, Engine: "a crash, a hung kernel or a corrupted CUDA context cannot touch
anything else"; Stages: "each with its own time limit".
Task: kernelbench/level1/19_ReLU.py.
Expected verdict: timeout (the engine or the worker kills the process at the stage's time
limit; the GPU is usable by the next evaluation)."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
extern "C" __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    // while (true) {}, written so that the compiler cannot prove it side-effect free and drop
    // it (NVRTC 13 removes an empty or volatile-local spin loop entirely): clock64() and
    // __nanosleep are volatile instructions, and the clock never reads -1.
    while (true) {
        if (clock64() == -1) break;
        __nanosleep(1000);
    }
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
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _mod.relu_kernel(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0,
                         args=(x, y, n))
        return y
