# kforge: dialect=kernelbench
"""ReLU in KernelBench's own candidate style: CUDA C++ compiled by nvcc through
torch.utils.cpp_extension.load_inline. float4 grid-stride kernel with a scalar tail, launched
on PyTorch's current stream."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

relu_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

__global__ void relu_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y,
                                 const float* __restrict__ xs, float* __restrict__ ys,
                                 long long nvec, long long n) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nvec; i += step) {
        float4 v = x[i];
        v.x = v.x <= 0.f ? 0.f : v.x;
        v.y = v.y <= 0.f ? 0.f : v.y;
        v.z = v.z <= 0.f ? 0.f : v.z;
        v.w = v.w <= 0.f ? 0.f : v.w;
        y[i] = v;
    }
    if (blockIdx.x == 0) {
        for (long long i = nvec * 4 + threadIdx.x; i < n; i += blockDim.x) {
            float v = xs[i];
            ys[i] = v <= 0.f ? 0.f : v;
        }
    }
}

__global__ void relu_scalar_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        float v = x[i];
        y[i] = v <= 0.f ? 0.f : v;
    }
}

torch::Tensor relu_cuda(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "relu_cuda: x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_cuda: x must be float32");
    x = x.contiguous();
    auto y = torch::empty_like(x);
    const long long n = x.numel();
    if (n == 0) return y;
    const int block = 256;
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    const bool aligned = (reinterpret_cast<uintptr_t>(x.data_ptr<float>()) % 16 == 0) &&
                         (reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0);
    if (aligned) {
        const long long nvec = n / 4;
        long long grid = (nvec + block - 1) / block;
        if (grid < 1) grid = 1;
        if (grid > 1048576) grid = 1048576;
        relu_vec4_kernel<<<(unsigned)grid, block, 0, stream>>>(
            reinterpret_cast<const float4*>(x.data_ptr<float>()),
            reinterpret_cast<float4*>(y.data_ptr<float>()), x.data_ptr<float>(),
            y.data_ptr<float>(), nvec, n);
    } else {
        long long grid = (n + block - 1) / block;
        if (grid > 1048576) grid = 1048576;
        relu_scalar_kernel<<<(unsigned)grid, block, 0, stream>>>(x.data_ptr<float>(),
                                                                y.data_ptr<float>(), n);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

relu_cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(
    name="kforge_example_relu_vec4",
    cpp_sources=relu_cpp_source,
    cuda_sources=relu_source,
    functions=["relu_cuda"],
    verbose=False,
    extra_cflags=["-O3"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = relu_ext

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu.relu_cuda(x)
