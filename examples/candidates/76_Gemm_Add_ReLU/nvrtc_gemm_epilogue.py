# kforge: dialect=nvrtc
"""GEMM + bias + ReLU: the GEMM stays on cuBLAS (torch.matmul against the transposed weight,
the same call nn.Linear without bias makes), and the two elementwise ops eager PyTorch runs as
separate kernels (x + bias, relu: two extra read+write passes over the 1024 x 8192 output)
become one in-place epilogue kernel with float4 loads and stores.

Parameters have the task's names and shapes (self.gemm = nn.Linear(..., bias=False),
self.bias), so the engine copies the reference's weights in."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
// y: M x N row-major, updated in place: y = relu(y + bias[col]).
// grid = (ceil(N / 4 / blockDim.x), min(M, 65535)), vec4 when N % 4 == 0 and pointers are aligned.
extern "C" __global__ void __launch_bounds__(1024) bias_relu_rows(float* __restrict__ y, const float* __restrict__ bias,
                                          int M, int N, int vec4) {
    if (vec4) {
        const int nv = N >> 2;
        const int c = blockIdx.x * blockDim.x + threadIdx.x;
        if (c >= nv) return;
        const float4 bb = reinterpret_cast<const float4*>(bias)[c];
        for (int r = blockIdx.y; r < M; r += gridDim.y) {
            float4* p = reinterpret_cast<float4*>(y + (long long)r * N) + c;
            float4 v = *p;
            v.x = fmaxf(v.x + bb.x, 0.f); v.y = fmaxf(v.y + bb.y, 0.f);
            v.z = fmaxf(v.z + bb.z, 0.f); v.w = fmaxf(v.w + bb.w, 0.f);
            *p = v;
        }
    } else {
        for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < N; c += gridDim.x * blockDim.x) {
            const float bb = bias[c];
            for (int r = blockIdx.y; r < M; r += gridDim.y) {
                float* p = y + (long long)r * N + c;
                *p = fmaxf(*p + bb, 0.f);
            }
        }
    }
}
'''
# kforge: tunable BLOCK=256 choices=64,128,256,512
BLOCK = 256
# kforge: tunable ROWS_PER_BLOCK=1 choices=1,2,4,8
ROWS_PER_BLOCK = 1

_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = torch.matmul(x, self.gemm.weight.t())   # cuBLAS, fp32
        y = y.contiguous()
        bias = self.bias.contiguous()
        M, N = y.shape
        if M == 0 or N == 0:
            return y
        vec4 = 1 if (N % 4 == 0 and y.data_ptr() % 16 == 0 and bias.data_ptr() % 16 == 0) else 0
        cols = N // 4 if vec4 else N
        gx = (cols + BLOCK - 1) // BLOCK
        gy = max(1, min(65535, (M + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK))
        _mod.bias_relu_rows(grid=(gx, gy), block=(BLOCK,), shared_mem=0, args=(y, bias, M, N, vec4))
        return y
