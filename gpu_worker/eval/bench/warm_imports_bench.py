#!/usr/bin/env python3
"""What the fork server's warm imports save (docs/evaluation.md, "Fork server"): the same
candidates through one fork server each way, with the warm imports (the default) and without
(KFORGE_WARM_IMPORTS empty), interleaved request by request across the two servers. Prints per
way and candidate the median of the build stage (the candidate's module, where torch.compile's
imports happen), of the evaluation's whole time in the server (total_s) and of the client's
wall time, and the verdicts.

The candidates (tiny_relu): `imports`, which imports what torch.compile imports on its first
call (torch._dynamo, torch._inductor.compile_fx) and computes a ReLU; `compiles`
(--compile), a real torch.compile of the ReLU, cached per candidate by --cache-dir after its
first evaluation (Inductor's FX graph cache; on a CPU that first compile takes a minute).

  warm_imports_bench.py --eval build/gpu_worker/eval/kforge-eval [--device cpu] [--n 8]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "engine"))
import serve_client  # noqa: E402

TASK = os.path.join(ROOT, "examples", "tasks", "tiny", "tiny_relu.py")
IMPORTS = '''import torch
import torch.nn as nn
import torch._dynamo
import torch._inductor.compile_fx


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''
COMPILES = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = torch.compile(torch.relu)

    def forward(self, x):
        return self.f(x)
'''


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--n", type=int, default=8, help="evaluations per candidate and way")
    p.add_argument("--compile", action="store_true", help="also the torch.compile candidate")
    a = p.parse_args()
    candidates = {"imports": IMPORTS}
    if a.compile:
        candidates["compiles"] = COMPILES
    task = open(TASK).read()
    with tempfile.TemporaryDirectory(prefix="kforge-warm-bench-") as tmp:
        servers = {}
        for way, warm in (("warm", None), ("cold", "")):
            env = dict(os.environ)
            env.pop("KFORGE_WARM_IMPORTS", None)
            if warm is not None:
                env["KFORGE_WARM_IMPORTS"] = warm
            cache = os.path.join(tmp, way)
            os.makedirs(cache)
            servers[way] = serve_client.Server(a.eval, cache_dir=cache, env=env)
        rows = {}
        try:
            for name, source in candidates.items():
                for way, server in servers.items():  # the first evaluation fills the caches
                    server.evaluate(task_source=task, candidate_source=source, device=a.device)
                for _ in range(a.n):
                    for way, server in servers.items():
                        t = time.perf_counter()
                        r = server.evaluate(task_source=task, candidate_source=source,
                                            device=a.device)
                        wall = time.perf_counter() - t
                        st = r.get("stages", {})
                        rows.setdefault((name, way), []).append(
                            (st.get("build_s", 0), st.get("total_s", 0), wall, r.get("verdict")))
        finally:
            for server in servers.values():
                server.close()
    print(f"{'candidate':10} {'way':5} {'n':>3} {'build_s':>8} {'total_s':>8} {'wall_s':>8}  verdicts")
    for (name, way), v in rows.items():
        med = [statistics.median(x[i] for x in v) for i in range(3)]
        verdicts = ",".join(sorted({x[3] for x in v}))
        print(f"{name:10} {way:5} {len(v):3d} {med[0]:8.3f} {med[1]:8.3f} {med[2]:8.3f}  {verdicts}")


if __name__ == "__main__":
    main()
