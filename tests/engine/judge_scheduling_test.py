#!/usr/bin/env python3
"""The candidate process cannot change how the judge is scheduled (gpu_worker/eval/
candidate_lockdown.cc: the scheduling, priority, limit and memory-placement calls only on
itself): tests/engine/slows_the_judge.py tries on every thread of the judge, as nobody when the
test runs as root (root's dropped capabilities would refuse it anyway; a worker's children run
as nobody, the judge's uid), and must report none taking effect. It also nices its session's
autogroup: until session 27's second review that session was the judge's (setsid is refused
the candidate), now the candidate process has one of its own, so the judge's (this test's
session's) stays as it was. Its speedup stays what its work earns (at most 1.0: it does the
product twice). Session 27's first review pinned the judge so and got 1.94 where an honest
candidate gets 0.3.

  judge_scheduling_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import json
import os
import re
import subprocess

from check_util import ROOT, check

TASK = os.path.join(ROOT, "tests", "engine", "busy", "task.py")
CANDIDATE = os.path.join(ROOT, "tests", "engine", "slows_the_judge.py")


def autogroup():
    """This process's session's autogroup line (the judge's: kforge-eval runs in this session),
    or None where the kernel has none."""
    try:
        return open("/proc/self/autogroup").read().split(" nice ")[1].strip()
    except (OSError, IndexError):
        return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    as_nobody = os.geteuid() == 0
    autogroup_before = autogroup()
    cmd = [os.path.abspath(args.eval), "--task", TASK, "--candidate", CANDIDATE, "--device", "cpu",
           "--policy", "runtime"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          user=65534 if as_nobody else None, cwd="/")
    r = json.loads(proc.stdout)
    changed = re.search(r"KFORGE_JUDGE_CHANGED=(\d+)", r.get("output_log", ""))
    check(r.get("verdict") == "ok", f"ok ({r.get('verdict')}: {r.get('reason', '')[:300]})")
    check(changed is not None and changed.group(1) == "0",
          f"none of its changes to the judge took effect (as {'nobody' if as_nobody else 'self'}:"
          f" {changed.group(0) if changed else 'no report'})")
    check(re.search(r"KFORGE_AUTOGROUP_SET=1", r.get("output_log", "")) is not None or
          autogroup_before is None,
          "the candidate niced its own session's autogroup")
    check(autogroup() == autogroup_before,
          f"the judge's session's autogroup (this test's) is as it was: {autogroup()!r}")
    check(r.get("speedup", 0) <= 1.0, f"speedup {r.get('speedup')} at most 1.0")
    print(f"judge_scheduling_test: ok, speedup {r['speedup']:.3f}, reference "
          f"{r['reference']['median_ms']:.3f} ms")


if __name__ == "__main__":
    main()
