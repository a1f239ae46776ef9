# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_add_scale.py with a tuning knob, for the demo and
the job tests on machines without a GPU: (a + b) * scale over CHUNKS slices (pure PyTorch).
The offline proposer explores CHUNKS and FUSED.
Expected verdict: ok."""
import torch
import torch.nn as nn

# kforge: tunable CHUNKS=2 choices=1,2,4,8
CHUNKS = 2
# kforge: tunable FUSED=0 choices=0,1
FUSED = 0


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        out = []
        for pa, pb in zip(torch.chunk(a, CHUNKS), torch.chunk(b, CHUNKS)):
            out.append(torch.add(pa, pb, alpha=1.0).mul_(self.scale) if FUSED else (pa + pb) * self.scale)
        return torch.cat(out)
