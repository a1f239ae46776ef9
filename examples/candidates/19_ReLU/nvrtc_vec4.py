# kforge: dialect=nvrtc
"""ReLU, memory-bound: 16-byte (float4) loads and stores, UNROLL independent float4 loads in
flight per thread before any store, a grid-stride loop, and a scalar tail for the last
numel % 4 elements. A scalar kernel covers tensors whose data pointer is not 16-byte aligned
(a contiguous view with an odd storage offset).
ReLU is pure bandwidth and eager PyTorch already streams it at ~4.2 TB/s on an H200, so this
candidate is expected to tie with eager (measured 0.98-1.00x), not to beat it."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
#ifndef UNROLL
#define UNROLL 2
#endif

__device__ __forceinline__ float relu1(float v) { return v <= 0.f ? 0.f : v; }  // NaN passes, like torch.relu

extern "C" __global__ void __launch_bounds__(1024)
relu_vec4(const float4* __restrict__ x, float4* __restrict__ y, const float* __restrict__ xs,
          float* __restrict__ ys, long long nvec, long long n) {
    const long long step = (long long)gridDim.x * blockDim.x * UNROLL;
    for (long long base = (long long)blockIdx.x * blockDim.x * UNROLL + threadIdx.x; base < nvec;
         base += step) {
        const float4* xp = x + base;
        float4* yp = y + base;
        float4 v[UNROLL];
        if (base + (long long)(UNROLL - 1) * blockDim.x < nvec) {      // full tile: no checks
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) v[u] = xp[u * blockDim.x];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                float4 r;
                r.x = relu1(v[u].x); r.y = relu1(v[u].y); r.z = relu1(v[u].z); r.w = relu1(v[u].w);
                yp[u * blockDim.x] = r;
            }
        } else {
            for (int u = 0; u < UNROLL && base + (long long)u * blockDim.x < nvec; ++u) {
                float4 a = xp[u * blockDim.x], r;
                r.x = relu1(a.x); r.y = relu1(a.y); r.z = relu1(a.z); r.w = relu1(a.w);
                yp[u * blockDim.x] = r;
            }
        }
    }
    // Tail: the last n - 4 * nvec (< 4) elements, done by the first block.
    if (blockIdx.x == 0) {
        for (long long i = nvec * 4 + threadIdx.x; i < n; i += blockDim.x) ys[i] = relu1(xs[i]);
    }
}

extern "C" __global__ void __launch_bounds__(1024)
relu_scalar(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) y[i] = relu1(x[i]);
}
'''
# kforge: tunable BLOCK=256 choices=128,256,512,1024
BLOCK = 256
# kforge: tunable UNROLL=2 choices=1,2,4,8
UNROLL = 2
# kforge: tunable MAX_GRID=1048576 choices=4096,16384,65536,1048576
MAX_GRID = 1048576

_mod = cuda.compile(SRC, options=["-DUNROLL=%d" % UNROLL])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        if n == 0:
            return y
        if x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0:
            nvec = n // 4
            per_block = BLOCK * UNROLL
            grid = max(1, min(MAX_GRID, (nvec + per_block - 1) // per_block))
            _mod.relu_vec4(grid=(grid,), block=(BLOCK,), shared_mem=0, args=(x, y, x, y, nvec, n))
        else:
            grid = max(1, min(MAX_GRID, (n + BLOCK - 1) // BLOCK))
            _mod.relu_scalar(grid=(grid,), block=(BLOCK,), shared_mem=0, args=(x, y, n))
        return y
