# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_linear.py with a tuning knob, for the demo and the
job tests on machines without a GPU: the batch computed in ROW_BLOCKS blocks of rows with the
reference's weights (pure PyTorch). The offline proposer explores ROW_BLOCKS.
Expected verdict: ok."""
import torch
import torch.nn as nn

# kforge: tunable ROW_BLOCKS=2 choices=1,2,4,8
ROW_BLOCKS = 2


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        return torch.cat([torch.addmm(b, rows, w.t()) for rows in torch.chunk(x, ROW_BLOCKS)])
