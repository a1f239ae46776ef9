# kforge: dialect=nvrtc
"""Conv2d + ReLU + per-channel bias: the convolution stays on cuDNN (self.conv, with its own
bias, exactly as the reference calls it), and relu(y) + bias[c], which eager PyTorch runs as
two kernels (two read+write passes over the 1 GB output), becomes one in-place kernel.
One blockIdx.y per (n, c) plane, so the channel needs no division per element; float4 when
the plane size (126 * 126 here) is a multiple of 4.

Parameters have the task's names and shapes (self.conv, self.bias of bias_shape), so the
engine copies the reference's weights in."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
// y: (planes = N*C) x HW, in place: y = max(y, 0) + bias[plane % C].
extern "C" __global__ void __launch_bounds__(1024) relu_bias_planes(float* __restrict__ y, const float* __restrict__ bias,
                                            long long planes, int C, long long HW, int vec4) {
    for (long long pl = blockIdx.y; pl < planes; pl += gridDim.y) {
        const float bb = bias[pl % C];
        float* p = y + pl * HW;
        if (vec4) {
            float4* pv = reinterpret_cast<float4*>(p);
            const long long nv = HW >> 2;
            for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nv;
                 i += (long long)gridDim.x * blockDim.x) {
                float4 v = pv[i];
                v.x = fmaxf(v.x, 0.f) + bb; v.y = fmaxf(v.y, 0.f) + bb;
                v.z = fmaxf(v.z, 0.f) + bb; v.w = fmaxf(v.w, 0.f) + bb;
                pv[i] = v;
            }
        } else {
            for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < HW;
                 i += (long long)gridDim.x * blockDim.x) {
                p[i] = fmaxf(p[i], 0.f) + bb;
            }
        }
    }
}
'''
# kforge: tunable BLOCK=128 choices=128,256,512,1024
BLOCK = 128

_mod = cuda.compile(SRC)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = self.conv(x).contiguous()
        n, c, h, w = y.shape
        hw = h * w
        planes = n * c
        if planes == 0 or hw == 0:
            return y
        bias = self.bias.contiguous()
        vec4 = 1 if (hw % 4 == 0 and y.data_ptr() % 16 == 0) else 0
        work = hw // 4 if vec4 else hw
        gx = max(1, (work + BLOCK - 1) // BLOCK)
        gy = min(planes, 65535)
        _mod.relu_bias_planes(grid=(gx, gy), block=(BLOCK,), shared_mem=0,
                              args=(y, bias, planes, c, hw, vec4))
        return y
