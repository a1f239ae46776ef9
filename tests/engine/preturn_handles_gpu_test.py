#!/usr/bin/env python3
"""Checks KFORGE_PRETURN_HANDLES (python_runtime.h, MakeMathHandlesBeforeTurn) on a GPU.

With it, the judge and the candidate process make torch's cuBLAS handle and its workspace right
after their CUDA contexts, before the GPU turn and before any task or candidate code. The
workspace is device memory from torch's caching allocator, so the first task or candidate code
to run finds more memory reserved in its process than without. Through one fork server per
setting, a task and a candidate that each report, at their module's import, what
torch.cuda.memory_reserved() said there (in the reason of the runtime error their forward
raises): with the switch, each process has reserved at least 1 MiB more than without it (the
workspace is 4-32 MiB, by GPU). "0" is the control, as unset is. Needs a GPU; run by
scripts/gpu_suite.sh's unit section. Exits 1 on the first failed check.

  preturn_handles_gpu_test.py --eval build-gpu/gpu_worker/eval/kforge-eval
"""
import argparse
import os
import re

import serve_client
from check_util import check

REPORTS = """
import torch
import torch.nn as nn

_reserved = torch.cuda.memory_reserved()


def _report(who):
    raise RuntimeError(f"{who} reserved at import: {_reserved} bytes")
"""
TASK = REPORTS + """

class Model(nn.Module):
    def forward(self, x):
        _report("task") if REPORT else None
        return torch.relu(x)


def get_inputs():
    return [torch.randn(256, device="cuda")]


def get_init_inputs():
    return []
"""
CANDIDATE = REPORTS + """

class ModelNew(nn.Module):
    def forward(self, x):
        _report("candidate")
        return torch.relu(x)
"""


def reserved(binary, value):
    """(the judge's, the candidate process's) bytes reserved at import, with
    KFORGE_PRETURN_HANDLES=value (None: unset)."""
    env = dict(os.environ)
    env.pop("KFORGE_PRETURN_HANDLES", None)
    if value is not None:
        env["KFORGE_PRETURN_HANDLES"] = value
    server = serve_client.Server(binary, env=env)
    found = {}
    try:
        for who, report in (("task", "True"), ("candidate", "False")):
            r = server.evaluate(task_source=TASK.replace("REPORT", report),
                                candidate_source=CANDIDATE, device="cuda", policy="runtime")
            m = re.search(who + r" reserved at import: (\d+) bytes", r.get("reason", ""))
            check(m is not None, f"KFORGE_PRETURN_HANDLES={value}: the {who} reports "
                                 f"({r.get('verdict')}: {r.get('reason', '')[-300:]})")
            found[who] = int(m.group(1))
    finally:
        check(server.close() == 0, "the server ends cleanly")
    print(f"KFORGE_PRETURN_HANDLES={value}: reserved at import {found}", flush=True)
    return found


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    on = reserved(args.eval, "1")
    for value in (None, "0"):
        off = reserved(args.eval, value)
        for who in ("task", "candidate"):
            check(on[who] >= off[who] + (1 << 20),
                  f"the {who}'s process has cuBLAS's workspace before its code with the switch "
                  f"({on[who]} bytes) and not with KFORGE_PRETURN_HANDLES={value} ({off[who]})")


if __name__ == "__main__":
    main()
