#!/usr/bin/env python3
"""Checks the fork server's warm imports (docs/evaluation.md, "Fork server"), in CPU mode.

The server imports torch.compile's modules once, with its request directory as TMPDIR, HOME
and cwd, and makes that one directory empty and private again for every request. Through one
server, twice, tests/engine/warm_paths_candidate.py checks in its own process that the modules
are there, that every path they keep from TMPDIR, HOME or the cwd lies in its request's
directory, and that nothing the earlier request left there (a file, directories) is
visible. The control: with KFORGE_WARM_IMPORTS empty the modules are not there, and the
candidate says so. Then a request directory that cannot be removed after its evaluation stops
the server once it has answered (server_stops, status 4). Last, with KFORGE_PRELOAD_MATH_LIBS=1
cuDNN's parts are mapped in the judge the server forks, and without it they are not. Exits 1 on
the first failed check.

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


# A task that says whether cuDNN's parts are mapped in the judge, a process the server forked
# (the candidate is the reference's own code, so the evaluation is ok when they are).
MAPS_TASK = """import torch
import torch.nn as nn

_maps = open("/proc/self/maps").read()
_parts = ("libcudnn_graph", "libcudnn_engines_precompiled", "libcudnn_engines_runtime_compiled",
          "libcudnn_heuristic")
_missing = [p for p in _parts if p not in _maps]
if _missing:
    raise RuntimeError("not mapped in the judge: " + ", ".join(_missing))


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
"""
MAPS_CANDIDATE = MAPS_TASK.split("_maps =")[0] + """

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def math_preload(binary, value):
    """One evaluation through a server started with KFORGE_PRELOAD_MATH_LIBS=value."""
    env = dict(os.environ, KFORGE_WARM_IMPORTS="")
    env.pop("KFORGE_PRELOAD_MATH_LIBS", None)
    if value is not None:
        env["KFORGE_PRELOAD_MATH_LIBS"] = value
    server = serve_client.Server(binary, env=env,
                                 user=65534 if os.geteuid() == 0 else None)
    try:
        return server.evaluate(task_source=MAPS_TASK, candidate_source=MAPS_CANDIDATE,
                               device="cpu")
    finally:
        check(server.close() == 0, "the server ends cleanly")


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
    # The math preload (math_preload.h): cuDNN's parts, loaded by the server before it forks,
    # are mapped in every evaluation's judge; the control (not asked for, or "0") has none.
    r = math_preload(args.eval, "1")
    check(r.get("verdict") == "ok",
          f"KFORGE_PRELOAD_MATH_LIBS=1: the judge finds cuDNN's parts mapped ({r.get('verdict')}: "
          f"{r.get('reason', '')[-300:]})")
    for value in (None, "0"):
        r = math_preload(args.eval, value)
        check(r.get("verdict") != "ok" and "not mapped in the judge" in r.get("reason", ""),
              f"control, KFORGE_PRELOAD_MATH_LIBS={value}: not mapped ({r.get('verdict')})")


if __name__ == "__main__":
    main()
