#!/usr/bin/env python3
"""KFORGE_CALL_PROFILE (gpu_worker/eval/call_profile.h): with it, an evaluation's output_log
ends with one profile line per kind of call (in CPU mode: the calibration's null calls and
the rest), each with the candidate process's steps in order, and one for the reference's
call-clock samples in the judge; without it, no such line. And the call clock charges the
reference what it charges the candidate: a candidate that is the reference's own code, on a task
whose output is large enough for its two copies to count (16M floats), comes out near x1 (a
reference whose copies were dropped, as a layout without memory once made them, came out at x0.3
to x0.4 in CPU mode).

  call_profile_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TASK = os.path.join(ROOT, "examples", "tasks", "tiny", "tiny_relu.py")
CAND = os.path.join(ROOT, "examples", "candidates", "tiny_relu", "correct.py")
STEPS = ["args", "forward", "sync", "rules", "copy", "sync2"]
PREFIX = "kforge-call-profile "


LARGE_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(1 << 24)]


def get_init_inputs():
    return []
"""


def evaluate(eval_bin, profile, task=TASK, candidate=CAND):
    env = dict(os.environ)
    env.pop("KFORGE_CALL_PROFILE", None)
    if profile:
        env["KFORGE_CALL_PROFILE"] = "1"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        subprocess.run([eval_bin, "--task", task, "--candidate", candidate, "--device", "cpu",
                        "--json", out], env=env, capture_output=True, timeout=300, check=True)
        r = json.load(open(out))
    lines = [json.loads(l[len(PREFIX):]) for l in (r.get("output_log") or "").splitlines()
             if l.startswith(PREFIX)]
    return r, lines


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    failures = []

    r, lines = evaluate(args.eval, True)
    if r["verdict"] != "ok":
        failures.append(f"verdict {r['verdict']}: {r.get('reason')}")
    kinds = {l["kind"]: l for l in lines}
    if sorted(kinds) != ["call", "null", "reference"]:
        failures.append(f"profile kinds {sorted(kinds)}, want call, null and reference: {lines}")
    ref = kinds.pop("reference", {})
    judge = ref.get("judge_us", {})
    n = (r.get("reference_call") or r.get("reference") or {}).get("n", 0)
    if not (ref.get("calls", 0) >= n > 0):
        failures.append(f"reference profile of {ref.get('calls')} calls, {n} samples timed")
    if not (0 < judge.get("forward", 0) <= judge.get("slots", 0)):
        failures.append(f"reference: forward then slots, both positive: {judge}")
    null = kinds.get("null", {})
    if null.get("calls") != 33:
        failures.append(f"null calls {null.get('calls')}, want the calibration's 33")
    for kind, l in kinds.items():
        steps = l.get("candidate_us", {})
        if list(steps) != STEPS:
            failures.append(f"{kind}: steps {list(steps)}, want {STEPS}")
        values = [steps[s] for s in STEPS if s in steps]
        if values != sorted(values):
            failures.append(f"{kind}: stamps not in order: {steps}")
        if values and l.get("roundtrip_us", 0) < values[-1]:
            failures.append(f"{kind}: round trip {l.get('roundtrip_us')} shorter than the "
                            f"candidate's {values[-1]}")

    r, lines = evaluate(args.eval, False)
    if lines:
        failures.append(f"profile lines without KFORGE_CALL_PROFILE: {lines}")

    with tempfile.TemporaryDirectory() as d:
        task, candidate = os.path.join(d, "task.py"), os.path.join(d, "candidate.py")
        open(task, "w").write(LARGE_TASK)
        open(candidate, "w").write(LARGE_TASK.replace("class Model(", "class ModelNew("))
        r, _ = evaluate(args.eval, False, task, candidate)
    speedup = r.get("speedup_call") or r.get("speedup") or 0
    print(f"the reference's own code as the candidate, 16M floats: {r['verdict']} "
          f"x{speedup:.3f} on the call clock")
    if r["verdict"] != "ok" or not 0.6 <= speedup <= 1 / 0.6:
        failures.append(f"the reference's own code as the candidate, 16M floats: {r['verdict']} "
                        f"x{speedup:.3f} on the call clock, want ok within x0.6-x1.67 "
                        f"(reference {r.get('reference_call') or r.get('reference')}, candidate "
                        f"{r.get('candidate_call') or r.get('candidate')})")

    for f in failures:
        print("FAIL", f)
    print("PASS" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
