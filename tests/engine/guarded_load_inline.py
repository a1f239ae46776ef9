# kforge: dialect=kernelbench
# ReLU whose CUDA extension is built only `if torch.cuda.is_available()` and the GPU's
# capability is high enough, as many released candidates do (tests/engine/build_ahead_test.py): a GPU worker's build ahead, which sees no
# GPU, must still build it, so the GPU's turn finds it in the cache.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <cuda_runtime.h>
__global__ void relu_kernel(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
void launch_relu(const float* x, float* y, long n) {
  relu_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, y, n);
}
"""

CPP_SOURCE = r"""
#include <torch/extension.h>
void launch_relu(const float* x, float* y, long n);
torch::Tensor relu(torch::Tensor x) {
  auto y = torch::empty_like(x);
  launch_relu(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
  return y;
}
"""

relu_ext = None
if torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 7:
    relu_ext = load_inline(name="kforge_guarded_relu", cpp_sources=CPP_SOURCE,
                           cuda_sources=CUDA_SOURCE, functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return relu_ext.relu(x.contiguous())
