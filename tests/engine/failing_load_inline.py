# kforge: dialect=kernelbench
# ReLU whose extension never builds (its function is declared nowhere, a mistake several
# released candidates make), caught, with PyTorch as the fallback: its outputs are correct,
# and it is rejected by the runtime rule `fallback`; its failed build is remembered so that a
# later process does not run the compiler again (gpu_worker/eval/build_failures.h,
# tests/engine/build_ahead_test.py).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

try:
    relu_ext = load_inline(name="kforge_failing_relu", cpp_sources="", functions=["relu_cpu"],
                           verbose=False)
except RuntimeError:
    relu_ext = None


class ModelNew(nn.Module):
    def forward(self, x):
        return relu_ext.relu_cpu(x) if relu_ext is not None else torch.relu(x)
