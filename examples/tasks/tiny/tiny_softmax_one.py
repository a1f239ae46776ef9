import torch
import torch.nn as nn

class Model(nn.Module):
    """
    A degenerate task (as CUDA-L1's corpus has, level 2 task 66): the softmax runs over a
    dimension of size 1, so every output is exactly 1 whatever the input. A candidate may
    compute that cheaply, but must compute it in each call.
    """
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x.sum(dim=1, keepdim=True), dim=1)

batch = 256
features = 1024

def get_inputs():
    return [torch.randn(batch, features)]

def get_init_inputs():
    return []
