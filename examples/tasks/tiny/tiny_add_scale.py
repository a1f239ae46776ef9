import torch
import torch.nn as nn

class Model(nn.Module):
    """
    (a + b) * scale for two small vectors (1024 fp32 elements each); scale is a constructor
    argument.
    """
    def __init__(self, scale: float):
        super(Model, self).__init__()
        self.scale = scale

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a + b) * self.scale

n = 1024
scale = 2.0

def get_inputs():
    a = torch.rand(n)
    b = torch.rand(n)
    return [a, b]

def get_init_inputs():
    return [scale]
