#!/usr/bin/env python3
"""KFORGE_CALL_PROFILE (gpu_worker/eval/call_profile.h): with it, an evaluation's output_log
ends with one profile line per kind of call (in CPU mode: the calibration's null calls and
the rest), each with the candidate process's steps in order, and one for the reference's
call-clock samples in the judge; without it, no such line.

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


def evaluate(eval_bin, profile):
    env = dict(os.environ)
    env.pop("KFORGE_CALL_PROFILE", None)
    if profile:
        env["KFORGE_CALL_PROFILE"] = "1"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        subprocess.run([eval_bin, "--task", TASK, "--candidate", CAND, "--device", "cpu",
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

    for f in failures:
        print("FAIL", f)
    print("PASS" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
