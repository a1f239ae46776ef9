# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_relu.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_relu (ReLU of randn(4096)).
Segfaults the process: ctypes.string_at(0) reads address 0. Must be flagged by the static
checks (ctypes); if they are bypassed, the sandboxed process dies of SIGSEGV and the engine
reports runtime_error, never a crash of its own.
Expected verdict: rejected (forbidden_import); with static checks off: runtime_error (SIGSEGV)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        import ctypes
        ctypes.string_at(0)
        return torch.relu(x)
