import torch
import torch.nn as nn

class Model(nn.Module):
    """
    nn.Linear(64, 32) on a batch of 16. The weights are randomly initialised, so a candidate
    is only correct if it uses the reference's weights (the engine copies them into ModelNew's
    parameters of the same names: linear.weight, linear.bias).
    """
    def __init__(self, in_features: int, out_features: int):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)

batch_size = 16
in_features = 64
out_features = 32

def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]

def get_init_inputs():
    return [in_features, out_features]
