# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_linear.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_linear (nn.Linear(64, 32) on randn(16, 64); uses the reference's weights).
Segfaults the process: ctypes.string_at(0) reads address 0. Must be flagged by the static
checks (ctypes); if they are bypassed, the sandboxed process dies of SIGSEGV and the engine
reports runtime_error, never a crash of its own.
Expected verdict: rejected (forbidden_import); with static checks off: runtime_error (SIGSEGV)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        import ctypes
        ctypes.string_at(0)
        return torch.nn.functional.linear(x, self.linear.weight, self.linear.bias)
