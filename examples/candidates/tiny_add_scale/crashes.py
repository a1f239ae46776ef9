# kforge: dialect=kernelbench
"""Host-only candidate for tasks/tiny/tiny_add_scale.py: pure PyTorch, runs on CPU and GPU.
Task: tiny_add_scale ((a + b) * scale, scale = 2.0).
Segfaults the process: ctypes.string_at(0) reads address 0. Must be flagged by the static
checks (ctypes); if they are bypassed, the sandboxed process dies of SIGSEGV and the engine
reports runtime_error, never a crash of its own.
Expected verdict: rejected (forbidden_import); with static checks off: runtime_error (SIGSEGV)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        import ctypes
        ctypes.string_at(0)
        return (a + b) * self.scale
