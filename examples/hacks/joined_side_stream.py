# kforge: dialect=nvrtc
"""Hack: work started before the start event on a side stream. The kernel goes to a private
stream (created through getattr, so the static side_stream rule does not see it) without
waiting for the caller's stream: its input is ready before the timed call begins. The caller's
stream then waits for it, so the output is complete when forward returns and nothing is left
running after the end event (the tail rule has nothing to see). A harness that lets the program
launch while the device is still busy before the start event (an L2 flush, a pre-roll of
memsets) runs this kernel beside that work and times only what is left of it. The kernel spins
0.5 ms on the global timer before its ReLU, so an honest measurement is at least 0.5 ms. Its
blocks are one warp each, so that even a few free warp slots beside a pre-roll would let it
start early.
Source: anchors.md, CUDA-L1: extra streams in 82 of 250 RL samples; docs/decisions.md, "Timing:
a device drained before the start event" (the pre-roll that was reverted for this hole).
Task: tasks/tiny/tiny_relu.py.
Expected verdict: ok (the defence is an honest time, not a rule).
Expected candidate median: at least 0.48 ms."""
import torch
import torch.nn as nn
from kforge import cuda

SRC = r'''
extern "C" __global__ void slow_relu(const float* __restrict__ x, float* __restrict__ y,
                                     long long n, unsigned long long spin_ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < spin_ns);
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''
BLOCK = 32
SPIN_NS = 500_000
_mod = cuda.compile(SRC)
_make_stream = getattr(torch.cuda, "Str" + "eam")
_use_stream = getattr(torch.cuda, "str" + "eam")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = _make_stream()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        with _use_stream(self.side):  # no wait for the caller's stream: starts at once
            _mod.slow_relu(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), shared_mem=0,
                           args=(x, y, n, SPIN_NS))
        torch.cuda.current_stream().wait_stream(self.side)  # joined before returning
        return y
