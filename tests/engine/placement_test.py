#!/usr/bin/env python3
"""The timing stage places fresh inputs at several addresses in turn (docs/evaluation.md,
"Timing"; engine.cc kInputPlacements): on tiny_relu, whose inputs are small, a candidate that
prints its input's address on every call sees, among its timed calls, 8 addresses that recur in
the same order (iteration i's set lies where set i - 8 lay), and every call's values are still
fresh (the result is ok: each timed iteration's outputs were checked against the reference's on
the same inputs). Exits 1 on the first failed check.

  placement_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import json
import os
import re
import subprocess
import tempfile

from check_util import ROOT, TINY_RELU_TASK, check

CANDIDATE = os.path.join(ROOT, "tests", "engine", "placement", "prints_input_address.py")
PLACEMENTS = 8


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kforge-placement-") as tmp:
        out = os.path.join(tmp, "result.json")
        proc = subprocess.run([args.eval, "--task", TINY_RELU_TASK, "--candidate", CANDIDATE,
                               "--device", "cpu", "--cache-dir", os.path.join(tmp, "cache"),
                               "--json", out], capture_output=True, text=True, timeout=240)
        check(os.path.exists(out), f"kforge-eval answered (exit {proc.returncode})")
        result = json.load(open(out))
    check(result.get("verdict") == "ok", f"the candidate is ok ({result.get('verdict')}: "
          f"{result.get('reason', '')[:200]})")
    at = [int(a) for a in re.findall(r"KFORGE_INPUT_AT=(\d+)", result.get("output_log", ""))]
    # The longest stretch of calls in which each address is the one 8 calls before it.
    best = run = 0
    for i in range(PLACEMENTS, len(at)):
        run = run + 1 if at[i] == at[i - PLACEMENTS] else 0
        best = max(best, run)
    check(best >= PLACEMENTS, f"a stretch of at least {PLACEMENTS} calls repeats the addresses "
          f"of the {PLACEMENTS} before it (longest {best} of {len(at)} calls)")
    # Somewhere in that stretch, 8 consecutive calls used 8 different addresses.
    check(any(len(set(at[i:i + PLACEMENTS])) == PLACEMENTS and
              all(at[k] == at[k - PLACEMENTS] for k in range(i + PLACEMENTS, i + 2 * PLACEMENTS))
              for i in range(0, len(at) - 2 * PLACEMENTS + 1)),
          f"{PLACEMENTS} consecutive timed calls had {PLACEMENTS} different input addresses, "
          f"repeated in the same order by the next {PLACEMENTS}")


if __name__ == "__main__":
    main()
