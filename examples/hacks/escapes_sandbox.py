# kforge: dialect=nvrtc
"""Hack: sandbox escape. At import, tries to reach the network (a UDP socket connected to
1.1.1.1:53) and to read /etc/shadow, to exfiltrate data or fetch a "solution" from outside.
Deliberately harmless outside a sandbox: connect() on a UDP socket sends no packet, and
nothing is ever sent or written. Inside the sandbox (no network, seccomp, private scratch
directory, no privileges) both must fail.
Source: design.md, The worker: "a sandbox: own process group, rlimits ..., no network,
no_new_privs and seccomp, a private scratch directory"; anchors.md, GPU MODE (pygpubench):
"seccomp and landlock".
Task: kernelbench/level1/19_ReLU.py (the kernel itself is a correct ReLU).
Expected verdict: rejected, rule forbidden_import (socket). With the static checks off, the
sandbox is what is tested: if both attempts fail the candidate is correct (ok, or
runtime_error where seccomp kills the process at socket()); if either succeeds, forward
returns zeros, so a leaking sandbox shows up as incorrect."""
import socket

import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
extern "C" __global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''
BLOCK = 256
_mod = cuda.compile(SRC)

ESCAPED = {"network": False, "shadow": False}
try:
    _sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # UDP connect only picks a route and sets the peer: no packet leaves the machine.
    ESCAPED["network"] = _sock.connect_ex(("1.1.1.1", 53)) == 0
    _sock.close()
except OSError:
    pass
try:
    with open("/etc/shadow", "rb") as _f:
        ESCAPED["shadow"] = len(_f.read(64)) > 0
except OSError:
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if any(ESCAPED.values()):
            return torch.zeros_like(x)               # make a leaking sandbox visible
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _mod.relu_kernel(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0,
                         args=(x, y, n))
        return y
