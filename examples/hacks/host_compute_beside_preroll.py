"""Hack: the work done on the host while the timer's pre-roll holds the GPU (found by session
23's review of the device clock's work time). Where forward finds its stream busy for longer than
PREROLL_SECONDS (a pre-roll, which the judge queues after the inputs are written, rather than
the call clock's short flush and fresh inputs, which a side copy would read before they are
written: session 25's first run, without that wait, was judged incorrect/timed_outputs), it
copies its input out on a side stream (created through getattr, so the static side_stream rule
does not see it), which runs beside the pre-roll, waits for that copy, computes the result on
the host (0.15 ms of host time, the stand-in for a real computation) and queues the result's
copy back to the device on its own stream, behind the pre-roll, all before the pre-roll (0.5 ms
at first) ends. Every launch returned before the pre-roll ended, so a device clock that took
the GPU's busy time of such a call would read two small copies, a few microseconds. Its side
copy ran beside the pre-roll, so the call is not queued whole behind it and its sample is the
span, from the side copy to the copy back, the host's work inside. Otherwise (the call clock,
the correctness trials) it does the same work in order.
Source: docs/evaluation.md, "Two clocks" (the work time); the session 23 review.
Task: tasks/tiny/tiny_relu.py.
Expected verdict: ok (the defence is an honest time, not a rule).
Expected candidate median: at least 0.13 ms."""
import time

import torch
import torch.nn as nn

HOST_SECONDS = 0.00015
PREROLL_SECONDS = 0.0001  # busy this long: a pre-roll, queued after the inputs were written
SIDE = getattr(torch.cuda, "Str" + "eam")
ON = getattr(torch.cuda, "str" + "eam")


def stream_stays_busy(seconds):
    """Whether the current stream is still busy after polling it for `seconds`."""
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        if torch.cuda.current_stream().query():
            return False
    return True


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
        if not stream_stays_busy(PREROLL_SECONDS):  # nothing long ahead: the work in order
            self.xh.copy_(x)
            busy_host(HOST_SECONDS)
            torch.clamp(self.xh, min=0, out=self.yh)
            y.copy_(self.yh)
            return y
        with ON(self.side):
            self.xh.copy_(x, non_blocking=True)  # runs now, beside the pre-roll
            self.done.record()
        self.done.synchronize()
        busy_host(HOST_SECONDS)
        torch.clamp(self.xh, min=0, out=self.yh)
        y.copy_(self.yh, non_blocking=True)  # queued behind the pre-roll
        return y
