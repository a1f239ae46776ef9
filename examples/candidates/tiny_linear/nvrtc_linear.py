# kforge: dialect=nvrtc
"""nn.Linear(64, 32) on a batch of 16: one warp per output element, the lanes stride over K
and the partial dot products are summed with warp shuffles; bias added by lane 0.
self.linear has the task's name and shape, so the engine copies the reference's weights in."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
// y[m, n] = sum_k x[m, k] * w[n, k] + b[n]; one warp per (m, n).
extern "C" __global__ void __launch_bounds__(1024) linear_warp(const float* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ b, float* __restrict__ y,
                                       int M, int N, int K, int has_bias) {
    const int lane = threadIdx.x & 31;
    const long long out = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (out >= (long long)M * N) return;          // whole warps leave together
    const int m = (int)(out / N), n = (int)(out % N);
    const float* xr = x + (long long)m * K;
    const float* wr = w + (long long)n * K;
    float acc = 0.f;
    for (int k = lane; k < K; k += 32) acc = fmaf(xr[k], wr[k], acc);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) y[out] = has_bias ? acc + b[n] : acc;
}
'''
# kforge: tunable WARPS_PER_BLOCK=4 choices=1,2,4,8
WARPS_PER_BLOCK = 4
_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = x.contiguous()
        w = self.linear.weight.contiguous()
        has_bias = self.linear.bias is not None
        b = self.linear.bias.contiguous() if has_bias else w   # w: a dummy pointer, never read
        K = x.shape[-1]
        N = w.shape[0]
        lead = x.shape[:-1]
        M = x.numel() // K if K > 0 else 0
        y = torch.empty(*lead, N, device=x.device, dtype=x.dtype)
        if M == 0 or N == 0:
            return y
        threads = WARPS_PER_BLOCK * 32
        grid = (M * N + WARPS_PER_BLOCK - 1) // WARPS_PER_BLOCK
        _mod.linear_warp(grid=(grid,), block=(threads,), shared_mem=0,
                         args=(x, w, b, y, M, N, K, 1 if has_bias else 0))
        return y
