# kforge: dialect=kernelbench
# ReLU built with load_inline for the CPU (g++ through ninja and /bin/sh): compilers must run
# inside the sandbox's view (gpu_worker/eval_view_test.cc).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

relu_ext = load_inline(
    name="kforge_view_relu_cpu",
    cpp_sources=r"""
#include <torch/extension.h>
torch::Tensor relu_cpu(torch::Tensor x) { return x.clamp_min(0); }
""",
    functions=["relu_cpu"],
    verbose=False,
)


class ModelNew(nn.Module):
    def forward(self, x):
        return relu_ext.relu_cpu(x)
