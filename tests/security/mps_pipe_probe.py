# kforge: dialect=kernelbench
# A candidate for tiny_relu under a worker whose node runs an MPS daemon (in the test, a socket
# standing for its control socket): it prints whether it got CUDA_MPS_PIPE_DIRECTORY, whether
# it can reach the control socket (it must: CUDA's MPS client connects there) and whether it
# can remove that socket or write beside it (it must not: other evaluations connect there),
# then answers correctly. gpu_worker/eval_view_test.cc checks what it printed.
import os
import socket

import torch
import torch.nn as nn


def attempt(name, action):
    try:
        print("MPS", name, "succeeded:", repr(action())[:200])
    except OSError as e:
        print("MPS", name, "failed:", type(e).__name__, e.errno and os.strerror(e.errno))


def connect(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        return "connected"


def plant(path):
    with open(path, "w") as f:
        f.write("planted")
    return path


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "")
        print("MPS env", repr(pipe))
        control = os.path.join(pipe, "control")
        attempt("connect", lambda: connect(control))
        attempt("unlink", lambda: os.unlink(control))
        attempt("plant", lambda: plant(os.path.join(pipe, "planted")))

    def forward(self, x):
        return torch.relu(x)
