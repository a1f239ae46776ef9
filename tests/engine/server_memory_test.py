#!/usr/bin/env python3
"""What one evaluation of a fork server leaves for the next (the red team, session 29), in CPU
mode.

Memory: the server's template process forks every evaluation process (serve.h), so no process
a candidate descends from ever held another request. Through one server, a first candidate
whose source (and output) holds a unique marker, then tests/engine/scans_memory_candidate.py,
which scans its own memory (/proc/self/mem) for that marker and reports how often it found it;
it must find it nowhere, and must find its own source's marker (the scan's control).

/dev/shm (as root, where a private mount namespace can be made, as the worker's sandbox gives
its server): with --clear-dev-shm the server removes what an evaluation left in /dev/shm, never
through a link. tests/engine/shm_candidate.py, twice through one server, plants a file, a
directory and a link to a directory of the test's, and reports whether the earlier one's are
there: the second must find none, and the linked directory keeps its file; a /dev/shm that
is not empty at the server's start is left alone. Exits 1 on the first failed check.

  server_memory_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time

import serve_client
from check_util import ROOT, TINY_RELU_TASK as TASK, check

HERE = os.path.join(ROOT, "tests", "engine")

VICTIM = """# kforge: dialect=kernelbench
# {mark}: another user's kernel idea lives in this source.
import torch
import torch.nn as nn

print("{mark} in the output too", flush=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)  # {mark}
"""


def evaluate(server, source):
    return server.evaluate(task_source=open(TASK).read(), candidate_source=source, device="cpu")


def scanned(result, what):
    m = re.search(r"KFORGE_SCAN victim=(\d+) self=(\d+)", result.get("output_log") or "")
    check(m is not None, f"{what}: the scan ran ({result.get('verdict')}: "
                         f"{(result.get('output_log') or result.get('reason', ''))[-400:]})")
    return int(m.group(1)), int(m.group(2))


def memory(binary):
    victim_mark = "KFORGE_VICTIM_" + secrets.token_hex(8)
    self_mark = "KFORGE_SELF_" + secrets.token_hex(8)
    scanner = open(os.path.join(HERE, "scans_memory_candidate.py")).read()
    for name, mark in (("VICTIM", victim_mark), ("SELF", self_mark)):
        scanner = scanner.replace(f"@{name}_HEAD@", mark[:10]).replace(f"@{name}_TAIL@", mark[10:])
    scanner = scanner.replace("@SELF_MARK@", self_mark)
    with tempfile.TemporaryDirectory(prefix="kforge-memory-test-") as tmp:
        server = serve_client.Server(binary, env=dict(os.environ, TMPDIR=tmp))
        try:
            first = evaluate(server, VICTIM.format(mark=victim_mark))
            check(first.get("verdict") == "ok" and victim_mark in first.get("output_log", ""),
                  f"the first candidate, with the marker in its source and output, is evaluated "
                  f"({first.get('verdict')})")
            for i in (1, 2):
                victim, own = scanned(evaluate(server, scanner), f"scan {i}")
                check(own > 0, f"scan {i}: the scan finds its own source's marker ({own} times)")
                check(victim == 0, f"scan {i}: a later candidate finds nothing of the first "
                                   f"request in its memory (the marker {victim} times)")
        finally:
            check(server.close() == 0, "the server ends cleanly")


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def template_gone(binary, sig):
    """A server whose template process is killed or stopped (`sig`) does not answer the next
    request (the worker then evaluates it in a one-shot child) and exits 1: a failed spawn is
    not the next candidate's runtime_error (the review of session 29)."""
    with tempfile.TemporaryDirectory(prefix="kforge-template-test-") as tmp:
        server = serve_client.Server(binary, env=dict(os.environ, TMPDIR=tmp),
                                     stderr=subprocess.DEVNULL)
        kids = []
        for _ in range(600):  # the template is forked once the warm imports are made
            kids = children(server.proc.pid)
            if kids:
                break
            time.sleep(0.1)
        check(len(kids) == 1, f"the server has its template process ({kids})")
        os.kill(kids[0], sig)
        answered = None
        try:
            answered = evaluate(server, open(os.path.join(
                ROOT, "examples", "candidates", "tiny_relu", "correct.py")).read())
        except (EOFError, BrokenPipeError):
            pass
        check(answered is None, f"template {signal.Signals(sig).name}: no answer "
                                f"({(answered or {}).get('verdict')})")
        if sig == signal.SIGSTOP:
            os.kill(kids[0], signal.SIGKILL)
        check(server.proc.wait(timeout=30) == 1,
              f"template {signal.Signals(sig).name}: the server exits 1")


def private_shm_possible():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                          capture_output=True).returncode == 0


def dev_shm(binary, clear, not_empty=False):
    """Two evaluations of shm_candidate.py through one server in a mount namespace of its own
    with a fresh /dev/shm (`not_empty`: holding a file before the server starts); returns the
    second's `found`."""
    plant = "kforge-shm-test-" + secrets.token_hex(6)
    with tempfile.TemporaryDirectory(prefix="kforge-shm-test-") as tmp:
        target = os.path.join(tmp, "target")
        os.mkdir(target)
        with open(os.path.join(target, "keep"), "w") as f:
            f.write("the test's\n")
        os.chmod(tmp, 0o755)
        source = (open(os.path.join(HERE, "shm_candidate.py")).read()
                  .replace("@PLANT@", plant).replace("@TARGET@", target))
        before = " && touch /dev/shm/before" if not_empty else ""
        wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                f'mount -t tmpfs -o mode=1777 tmpfs /dev/shm{before} && exec "$@"', "sh"]
        server = serve_client.Server(binary, env=dict(os.environ, TMPDIR=tmp), prefix=wrap,
                                     args=["--clear-dev-shm"] if clear else [])
        found = []
        try:
            for i in (1, 2):
                r = evaluate(server, source)
                m = re.search(r"KFORGE_SHM found=(\d)", r.get("output_log") or "")
                check(m is not None, f"/dev/shm {i}: the candidate ran ({r.get('verdict')}: "
                                     f"{(r.get('output_log') or r.get('reason', ''))[-400:]})")
                found.append(int(m.group(1)))
        finally:
            check(server.close() == 0, "the server ends cleanly")
        check(found[0] == 0, "the first evaluation finds no plant")
        check(os.path.exists(os.path.join(target, "keep")),
              "the directory a planted link named keeps its file")
        return found[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    memory(args.eval)
    template_gone(args.eval, signal.SIGKILL)
    template_gone(args.eval, signal.SIGSTOP)
    if not private_shm_possible():
        print("SKIP /dev/shm: needs root and a mount namespace of its own", flush=True)
        return
    check(dev_shm(args.eval, clear=True) == 0,
          "--clear-dev-shm: a later evaluation finds nothing an earlier one left in /dev/shm")
    check(dev_shm(args.eval, clear=False) == 1,
          "control: without --clear-dev-shm the plant outlives its evaluation")
    check(dev_shm(args.eval, clear=True, not_empty=True) == 1,
          "a /dev/shm not empty at the server's start is not its own: it clears nothing")


if __name__ == "__main__":
    main()
