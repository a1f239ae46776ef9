#!/usr/bin/env python3
"""Checks the fork server's warm imports (docs/evaluation.md, "Fork server"), in CPU mode.

The server imports torch.compile's modules once, with its request directory as TMPDIR, HOME
and cwd, and makes that one directory empty and private again for every request. Through one
server, twice, tests/engine/warm_paths_candidate.py checks in its own process that the modules
are there, that every path they keep from TMPDIR, HOME or the cwd lies in its request's
directory, and that nothing the earlier request left there (a file, directories) is
visible. The control: with KFORGE_WARM_IMPORTS empty the modules are not there,
and the candidate says so. Exits 1 on the first failed check.

  warm_imports_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import os
import tempfile

import serve_client
from check_util import ROOT, TINY_RELU_TASK as TASK, check

CANDIDATE = os.path.join(ROOT, "tests", "engine", "warm_paths_candidate.py")


def run_twice(binary, tmp, warm):
    env = dict(os.environ, TMPDIR=tmp)
    if warm is not None:
        env["KFORGE_WARM_IMPORTS"] = warm
    server = serve_client.Server(binary, env=env)
    try:
        return [server.evaluate(task_source=open(TASK).read(),
                                candidate_source=open(CANDIDATE).read(), device="cpu")
                for _ in range(2)]
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


if __name__ == "__main__":
    main()
