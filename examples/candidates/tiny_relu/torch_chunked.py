# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_relu.py with a tuning knob, for the demo and the job
tests on machines without a GPU: ReLU computed over CHUNKS slices (pure PyTorch, runs on CPU
and GPU). The offline proposer explores CHUNKS.
Expected verdict: ok."""
import torch
import torch.nn as nn

# kforge: tunable CHUNKS=2 choices=1,2,4,8
CHUNKS = 2


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cat([part.clamp(min=0.0) for part in torch.chunk(x, CHUNKS)])
