#!/usr/bin/env python3
"""Checks the fork server's warm imports (docs/evaluation.md, "Fork server"), in CPU mode.

The server imports torch.compile's modules once, with its request directory as TMPDIR, HOME
and cwd, and makes that one directory empty and private again for every request. Through one
server, twice, tests/engine/warm_paths_candidate.py checks in its own process that the modules
are there, that every path they keep from TMPDIR, HOME or the cwd lies in its request's
directory, and that nothing the earlier request left there (a file, directories) is
visible. The control: with KFORGE_WARM_IMPORTS empty the modules are not there, and the
candidate says so. Last, a request directory that cannot be removed after its evaluation stops
the server once it has answered (server_stops, status 4). Exits 1 on the first failed check.

  warm_imports_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import os
import shutil
import tempfile
import threading
import time

import serve_client
from check_util import ROOT, TINY_RELU_TASK as TASK, check

CANDIDATE = os.path.join(ROOT, "tests", "engine", "warm_paths_candidate.py")


def run_twice(binary, tmp, warm):
    """Two evaluations through one server; as root the server runs as nobody (as in a worker's
    sandbox), for whom a directory created unreadable is locked."""
    # A relative entry, which the server makes absolute (the candidate checks that no entry
    # lies in its cwd).
    env = dict(os.environ, TMPDIR=tmp, KFORGE_PYTHONPATH="relative-entry")
    if warm is not None:
        env["KFORGE_WARM_IMPORTS"] = warm
    as_nobody = os.geteuid() == 0
    if as_nobody:
        os.chown(tmp, 65534, 65534)
    server = serve_client.Server(binary, env=env, user=65534 if as_nobody else None)
    try:
        return [server.evaluate(task_source=open(TASK).read(),
                                candidate_source=open(CANDIDATE).read(), device="cpu")
                for _ in range(2)]
    finally:
        check(server.close() == 0, "the server ends cleanly")


SLEEPS = """import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        time.sleep(3)

    def forward(self, x):
        return torch.relu(x)
"""


def server_stops_when_its_directory_stays(binary):
    """The server's TMPDIR is made read-only while an evaluation runs, so its request directory
    cannot be removed afterwards (as root the server runs as nobody, for whom the mode holds):
    the answer says server_stops, the server ends with status 4, and a fresh server in a
    writable TMPDIR evaluates again."""
    as_nobody = os.geteuid() == 0
    tmp = tempfile.mkdtemp(prefix="kforge-warm-test-")
    try:
        if as_nobody:
            os.chown(tmp, 65534, 65534)
        env = dict(os.environ, TMPDIR=tmp, KFORGE_WARM_IMPORTS="")
        server = serve_client.Server(binary, env=env, user=65534 if as_nobody else None)
        # A first request, answered before the watch begins: the server's own start makes and
        # removes a request directory too, which the watch below must not take for the request's.
        server.evaluate(task_source=open(TASK).read(),
                        candidate_source=SLEEPS.replace("time.sleep(3)", "pass"), device="cpu")
        result = {}
        runner = threading.Thread(target=lambda: result.update(server.evaluate(
            task_source=open(TASK).read(), candidate_source=SLEEPS, device="cpu")))
        runner.start()
        deadline = time.time() + 60
        # The request's directory is made when the request arrives (the server removed it
        # after its start); the candidate then sleeps 3 s in its evaluation.
        while time.time() < deadline and not any(n.startswith("kforge-req-")
                                                 for n in os.listdir(tmp)):
            time.sleep(0.02)
        os.chmod(tmp, 0o555)
        runner.join(120)
        check(result.get("server_stops") is True,
              f"an undeletable request directory: the answer says the server stops "
              f"({result.get('verdict')}, server_stops={result.get('server_stops')})")
        check(server.proc.wait(timeout=60) == 4, "and the server ends with status 4")
    finally:
        os.chmod(tmp, 0o755)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kforge-warm-test-") as tmp:
        for i, r in enumerate(run_twice(args.eval, tmp, None)):
            check(r.get("verdict") == "ok",
                  f"request {i + 1}: the warm imports keep no path outside the request's own "
                  f"directory, and nothing of the request before ({r.get('verdict')}: "
                  f"{r.get('reason', '')[-300:]})")
        left = [n for n in os.listdir(tmp) if n.startswith("kforge-req")]
        check(left == [], f"the server leaves no request directory behind ({left})")
    with tempfile.TemporaryDirectory(prefix="kforge-warm-test-") as tmp:
        r = run_twice(args.eval, tmp, "")[0]
        check(r.get("verdict") != "ok" and "no warm imports" in r.get("reason", ""),
              f"control: without warm imports the candidate finds none ({r.get('verdict')})")
    server_stops_when_its_directory_stays(args.eval)


if __name__ == "__main__":
    main()
