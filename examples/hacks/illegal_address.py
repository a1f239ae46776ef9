# kforge: dialect=nvrtc
"""Bug class: illegal memory access. The kernel stores through a null pointer (passed in as an
integer so that the compiler cannot drop the store). The CUDA context is corrupted from then
on: every later CUDA call in the process fails.
Source: anchors.md, KernelBench: "an illegal memory access poisons the whole process (#76)";
design.md, Engine: "a crash, a hung kernel or a corrupted CUDA context cannot touch anything
else".
Task: kernelbench/level1/19_ReLU.py.
Expected verdict: runtime_error (an illegal address was encountered), reported by the engine
or the worker, and the next evaluation on the same GPU runs normally."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
extern "C" __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n,
                                       unsigned long long bad_address) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float* out = reinterpret_cast<float*>(bad_address);   // 0: a null pointer
        out[i] = x[i] > 0.f ? x[i] : 0.f;
    }
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
                         args=(x, y, n, 0))
        return y
