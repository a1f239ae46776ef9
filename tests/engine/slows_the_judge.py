# kforge: dialect=kernelbench
"""A candidate for tests/engine/busy/task.py that tries to change how the judge (its parent)
is scheduled, which would outlive the candidate's processes and slow the reference timed alone
too (docs/evaluation.md, "The reference alone"; session 27's review): every thread of the judge
pinned to one CPU, niced to 19, its I/O priority lowered, its CPU limit cut, its process group's
and its user's priority lowered. A process of the same uid may do all of it unless the seccomp
filter of the candidate process refuses. It prints how many of its attempts took effect
(KFORGE_JUDGE_CHANGED=N), then nices its session's autogroup (KFORGE_AUTOGROUP_SET=1 where
that took; the candidate process has a session of its own, not the judge's), and does the
task's product twice (honestly about half as fast as the reference). judge_scheduling_test.py
runs it as nobody."""
import ctypes
import os
import resource

import torch
import torch.nn as nn

_libc = ctypes.CDLL(None, use_errno=True)
_IOPRIO_SET = 251  # x86_64
_IOPRIO_WHO_PROCESS = 1
_IOPRIO_IDLE = (3 << 13)


def _judge_threads():
    judge = os.getppid()
    try:
        return judge, [int(t) for t in os.listdir(f"/proc/{judge}/task")]
    except OSError:
        return judge, list(range(judge, judge + 256))


def _attempts():
    judge, tids = _judge_threads()
    done = 0
    for tid in tids:
        for attempt in (lambda: os.sched_setaffinity(tid, {0}),
                        lambda: os.setpriority(os.PRIO_PROCESS, tid, 19),
                        lambda: os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))):
            try:
                attempt()
                done += 1
            except OSError:
                pass
        if _libc.syscall(_IOPRIO_SET, _IOPRIO_WHO_PROCESS, tid, _IOPRIO_IDLE) == 0:
            done += 1
    for attempt in (lambda: resource.prlimit(judge, resource.RLIMIT_NICE, (0, 0)),
                    lambda: os.setpriority(os.PRIO_PGRP, 0, 19),
                    lambda: os.setpriority(os.PRIO_USER, os.getuid(), 19)):
        try:
            attempt()
            done += 1
        except OSError:
            pass
    return done


def _autogroup():
    """Nices its session's autogroup (setsid is refused it): 1 if it took."""
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("19")
        with open("/proc/self/autogroup") as f:
            return int(f.read().split()[-1] == "19")
    except (OSError, ValueError):
        return 0


class ModelNew(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, n) / n ** 0.5)
        print(f"KFORGE_JUDGE_CHANGED={_attempts()}", flush=True)
        print(f"KFORGE_AUTOGROUP_SET={_autogroup()}", flush=True)

    def forward(self, x):
        y = x @ self.w
        return x @ self.w + 0 * y
