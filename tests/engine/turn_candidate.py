# kforge: dialect=kernelbench
# A tiny_relu candidate for gpu_turn_test.py: when its code first runs (which, with GPU turns,
# is inside its evaluation's turn) it prints the system-wide monotonic time, tries to let go of
# the turn it is in, says whether the GPU's lock is still held (the test fills in @LOCK@), sleeps
# 2 s and prints the time again, then answers correctly.
import ctypes
import fcntl
import os
import time

import torch
import torch.nn as nn

print(f"TURN start {time.monotonic():.6f}", flush=True)


def release_every_lock():
    """Unlocks every descriptor this process has, and every one of its parents' it can reach
    (pidfd_getfd, /proc/PID/fd): a descriptor sharing the supervisor's open file description
    of the GPU's lock file would release the turn."""
    fds = list(range(3, 1024))
    libc = ctypes.CDLL(None, use_errno=True)
    pid = os.getpid()
    while pid > 1:
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        pidfd = libc.syscall(434, pid, 0)  # pidfd_open
        for fd in range(3, 64):
            if pidfd >= 0:
                got = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
                if got >= 0:
                    fds.append(got)
            try:
                fds.append(os.open(f"/proc/{pid}/fd/{fd}", os.O_RDONLY))
            except OSError:
                pass
    for fd in fds:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError:
            pass


def turn_is_held(path):
    """Whether the GPU's lock file (the test puts its path in) is locked while this runs: by
    the supervisor, for this evaluation's turn."""
    if not os.path.exists(path):
        return "absent"
    fd = os.open(path, os.O_RDONLY)
    try:
        # Shared: two of these probing at once (gpu_turn_test's control, no turns) must not
        # see each other's probe as a turn, which the supervisor's exclusive lock is.
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return "free"
    except BlockingIOError:
        return "held"
    finally:
        os.close(fd)


release_every_lock()
print("TURN lock", turn_is_held("@LOCK@"), flush=True)
time.sleep(2.0)
print(f"TURN end {time.monotonic():.6f}", flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
