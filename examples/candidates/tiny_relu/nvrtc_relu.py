# kforge: dialect=nvrtc
"""ReLU with one thread per element: the smallest complete nvrtc candidate."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
extern "C" __global__ void __launch_bounds__(1024) relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''
# kforge: tunable BLOCK=256 choices=128,256,512,1024
BLOCK = 256
_mod = cuda.compile(SRC)          # NVRTC; raises cuda.CompileError with the log on failure


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return y
        _mod.relu_kernel(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0, args=(x, y, n))
        return y
