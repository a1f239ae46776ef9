# kforge: dialect=kernelbench
"""A candidate for tiny_relu that reads the process-wide precision switches it was started
with: every one must be fp32 (cuDNN's TF32 off, unlike torch's default, in the judge and the
candidate's process alike: docs/evaluation.md, "Numerics of the reference"). Any other start
makes its output wrong.
Expected verdict: ok."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        b = torch.backends
        fp32 = not (b.cudnn.allow_tf32 or b.cuda.matmul.allow_tf32) and \
            torch.get_float32_matmul_precision() == "highest"
        y = x.clamp(min=0.0)
        return y if fp32 else y + 1
