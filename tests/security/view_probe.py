# kforge: dialect=kernelbench
# A candidate for tiny_relu that tries to reach what its sandbox's view leaves out (issue 15),
# prints what each attempt got and then answers correctly. The test fills in the @...@ paths
# and ports; gpu_worker/eval_view_test.cc checks every attempt failed.
import os
import socket
import subprocess

import torch
import torch.nn as nn


def attempt(name, action):
    # Flushed: a program the attempt runs writes to the same descriptor, and must not land in
    # the middle of a line still in Python's buffer.
    try:
        print("VIEW", name, "succeeded:", repr(action())[:200], flush=True)
    except OSError as e:
        print("VIEW", name, "failed:", type(e).__name__, e.errno and os.strerror(e.errno),
              flush=True)


def connect(family, address):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.connect(address)
        return "connected"


def write_script(path):
    # Executable from its creation: the evaluation process may not chmod.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
    os.write(fd, b"#!/bin/sh\necho planted-ran\n")
    os.close(fd)
    return path


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        # What /tmp shows of the planted directories, and how many entries it has: not the whole
        # listing, which without the view is the host's (hundreds of entries on a machine that
        # has run the tests) and filled the 16 KiB the output log keeps, cutting the lines below.
        names = os.listdir("/tmp")
        print("VIEW tmp-listing", len(names), "entries, planted:",
              sorted(n for n in names if n.startswith("kforge-view-planted")), flush=True)
        attempt("other-scratch", lambda: os.listdir("@OTHER_SCRATCH@"))
        attempt("host-tmp-file", lambda: open("@PLANTED@").read())
        attempt("checkout-file", lambda: open("@README@").read())
        attempt("database-socket", lambda: connect(socket.AF_UNIX, "@SOCKET@"))
        attempt("coordinator-port", lambda: connect(socket.AF_INET, ("127.0.0.1", @PORT@)))
        attempt("exec-id", lambda: subprocess.run(["/usr/bin/id"], capture_output=True).stdout)
        own = os.path.join(os.environ["TMPDIR"], "planted.sh")
        attempt("exec-own-script", lambda: subprocess.run([write_script(own)]).returncode)

    def forward(self, x):
        return torch.relu(x)
