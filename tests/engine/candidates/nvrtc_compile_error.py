# kforge: dialect=nvrtc
"""An nvrtc candidate for tiny_relu whose kernel does not compile: compile_error with the log,
also in CPU mode (NVRTC runs without a GPU)."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
extern "C" __global__ void relu(const float* x, float* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = undeclared_identifier(x[i]);
}
'''
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _mod.relu(grid=((x.numel() + 255) // 256,), block=(256,), args=(x, y, x.numel()))
        return y
