# kforge: dialect=kernelbench
"""Hack: an output in pinned host memory, tagged as a CUDA tensor. forward copies its input to
the host, computes the ReLU there, writes it into page-locked host memory and returns that
memory wrapped (through __cuda_array_interface__) as a cuda:0 tensor: with unified addressing a
kernel could read it, and the host wrote it with no kernel or copy the timer would see, so a
clock that counts GPU work alone would miss the host's share (with a copy on another stream
beside the timing pre-roll, all of it).
Source: the session 6 review of the activity clock.
Task: tasks/tiny/tiny_relu.py.
Expected verdict: rejected, rule host_memory (output memory is not device memory)."""
import torch
import torch.nn as nn


class _HostBuffer:
    """A page-locked host tensor presented as CUDA memory."""

    def __init__(self, t):
        self.keep = t
        self.__cuda_array_interface__ = {"shape": tuple(t.shape), "typestr": "<f4",
                                         "data": (t.data_ptr(), False), "version": 2}


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape, dtype=torch.float32, pin_memory=True)
        torch.clamp(x.cpu(), min=0.0, out=out)
        return torch.as_tensor(_HostBuffer(out), device=x.device)
