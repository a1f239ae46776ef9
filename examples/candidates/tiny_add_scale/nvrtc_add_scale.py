# kforge: dialect=nvrtc
"""(a + b) * scale in one kernel; scale is a Python float passed to a 4-byte float parameter."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
extern "C" __global__ void __launch_bounds__(1024) add_scale(const float* __restrict__ a, const float* __restrict__ b,
                                     float* __restrict__ out, float scale, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (a[i] + b[i]) * scale;
}
'''
# kforge: tunable BLOCK=256 choices=64,128,256,512
BLOCK = 256
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        n = a.numel()
        if n == 0:
            return out
        _mod.add_scale(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0,
                       args=(a, b, out, float(self.scale), n))
        return out
