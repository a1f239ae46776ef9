"""Hack: the work done on the host while the timer's pre-roll holds the GPU (found by session
23's review of the device clock's work time). Where forward finds its stream still busy (a
pre-roll running ahead of it), it first queues the result's copy back to the device on its own
stream, behind the pre-roll, then copies its input out on a side stream (created through
getattr, so the static side_stream rule does not see it), which runs beside the pre-roll, waits
for that copy, computes the result on the host (0.15 ms of host time, the stand-in for a real
computation) into the buffer the queued copy will read, and returns before the pre-roll ends.
Every launch returned before the pre-roll ended, so a device clock that took the GPU's busy
time of such a call would read two small copies, a few microseconds. Its side copy ran beside
the pre-roll, so the call is not queued whole behind it and its sample is the span, from the
side copy to the copy back, the host's work inside. With an idle stream (the call clock, the
correctness trials) it does the same work in order.
Source: docs/evaluation.md, "Two clocks" (the work time); the session 23 review.
Task: tasks/tiny/tiny_relu.py.
Expected verdict: ok (the defence is an honest time, not a rule).
Expected candidate median: at least 0.13 ms."""
import time

import torch
import torch.nn as nn

HOST_SECONDS = 0.00015
SIDE = getattr(torch.cuda, "Str" + "eam")
ON = getattr(torch.cuda, "str" + "eam")


def busy_host(seconds):
    """The host's share of the work."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, x):
        if self.side is None:
            self.side = SIDE()
            self.xh = torch.empty(x.shape, dtype=x.dtype).pin_memory()
            self.yh = torch.empty(x.shape, dtype=x.dtype).pin_memory()
            self.done = torch.cuda.Event()
        y = torch.empty_like(x)
        if torch.cuda.current_stream().query():  # nothing ahead: the work in order
            self.xh.copy_(x)
            busy_host(HOST_SECONDS)
            torch.clamp(self.xh, min=0, out=self.yh)
            y.copy_(self.yh)
            return y
        y.copy_(self.yh, non_blocking=True)  # queued behind the pre-roll; reads yh when it runs
        with ON(self.side):
            self.xh.copy_(x, non_blocking=True)  # runs now, beside the pre-roll
            self.done.record()
        self.done.synchronize()
        busy_host(HOST_SECONDS)
        torch.clamp(self.xh, min=0, out=self.yh)
        return y
