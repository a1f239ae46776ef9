#!/usr/bin/env python3
"""What one evaluation of a fork server leaves for the next (the red team, session 29), in CPU
mode.

Memory: the server's template process forks every evaluation process (serve.h), so no process
a candidate descends from ever held another request. Through one server, a first candidate
whose source (and output) holds a unique marker, then tests/engine/scans_memory_candidate.py,
which scans its own memory (/proc/self/mem) for that marker and reports how often it found it;
it must find it nowhere, and must find its own source's marker (the scan's control).

Exits 1 on the first failed check.

  server_memory_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import os
import re
import secrets
import tempfile

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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    memory(args.eval)


if __name__ == "__main__":
    main()
