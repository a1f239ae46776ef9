# A candidate for tiny_relu that prints everything it can learn of its environment (os.environ
# through torch.os, which the static rules do not refuse, and /proc/self/environ) and then
# answers correctly. tests/security_test.cc checks that no secret of the worker is in it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        env = dict(torch.os.environ)
        fd = torch.os.open("/proc/self/environ", 0)
        raw = torch.os.read(fd, 1 << 20)
        torch.os.close(fd)
        print("ENVIRON", sorted(env.items()))
        print("PROC_ENVIRON", raw.replace(b"\0", b"\n").decode(errors="replace"))

    def forward(self, x):
        return torch.relu(x)
