#!/usr/bin/env python3
"""A task whose model keeps state across forward calls (tests/engine/stateful/task.py, the shape
of KernelBench 3_33's RNN) gets the same forward calls, in the same order, in the reference and
in the candidate, from the first trial to the post-timing check (docs/evaluation.md, "Timing":
one call each, in step), in CPU mode:
  1. the honest candidate is ok, with every timed iteration's outputs checked (until session 13
     the timing's output-layout probe called the reference once more than the candidate:
     incorrect, rule timed_outputs, in iteration 0);
  2. the candidate that keeps no state is incorrect in the correctness trials (the control: the
     task's state matters to its outputs);
  3. the first trial's part of each program's trial time is reported, one call of five;
  4. through a fork server that shares the reference (KFORGE_SHARE_REFERENCE=all), whose judges
     run the reference untimed in most iterations, the honest candidate is ok every time.
Exits 1 on the first failed check.

  stateful_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import json
import os
import subprocess
import tempfile

import serve_client
from check_util import ROOT, check

DIR = os.path.join(ROOT, "tests", "engine", "stateful")
TASK = os.path.join(DIR, "task.py")
HONEST = os.path.join(DIR, "honest.py")
STATELESS = os.path.join(DIR, "stateless.py")


def one_shot(binary, candidate):
    with tempfile.TemporaryDirectory(prefix="kforge-stateful-") as tmp:
        out = os.path.join(tmp, "result.json")
        subprocess.run([binary, "--task", TASK, "--candidate", candidate, "--device", "cpu",
                        "--json", out], check=True, timeout=600)
        return json.load(open(out))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()

    r = one_shot(args.eval, HONEST)
    check(r["verdict"] == "ok", f"honest: ok ({r['verdict']}: {r.get('reason')})")
    # Every sampled iteration beside the candidate checks its outputs: candidate_call.n counts
    # them. reference_call holds the reference-alone samples instead where their interval lies
    # below the beside one's (docs/evaluation.md, "The reference alone"): unchecked, at least
    # kAloneMinSamples (10) of them.
    ref_n, cand_n = r["reference_call"]["n"], r["candidate_call"]["n"]
    alone = "the reference alone:" in r.get("timing_clock_note", "")
    check(r["correctness"]["trials_passed"] == r["correctness"]["trials"] >= 1 and
          cand_n >= 20 and ref_n >= (10 if alone else 20),
          f"honest: every trial passed and at least 20 timed iterations were checked "
          f"({cand_n} checked; reference {ref_n} samples{' alone' if alone else ''})")

    # The first trial's part of each program's trial time (StageDurations): one of the five
    # calls, each at least the forward's busy wait (2 ms the reference's, 1 ms the candidate's).
    st = r["stages"]
    for prog, wait in (("reference", 0.002), ("candidate", 0.001)):
        first, whole = st.get(f"correctness_first_{prog}_s", 0), st[f"correctness_{prog}_s"]
        check(wait <= first < whole and whole >= 5 * wait,
              f"honest: the first trial's {prog} part {first:.4f} s of {whole:.4f} s")

    r = one_shot(args.eval, STATELESS)
    check(r["verdict"] == "incorrect" and r.get("stage") == "correctness" and
          r["correctness"]["trials_passed"] == 1,
          f"stateless: incorrect in the second trial ({r['verdict']}, stage {r.get('stage')}, "
          f"{r['correctness'].get('trials_passed')} passed)")

    with tempfile.TemporaryDirectory(prefix="kforge-stateful-share-") as cache:
        server = serve_client.Server(args.eval, cache,
                                     env=dict(os.environ, KFORGE_SHARE_REFERENCE="all"))
        had_share = 0
        for k in range(4):
            r = server.evaluate(task_source=open(TASK).read(),
                                candidate_source=open(HONEST).read(), device="cpu")
            check(r["verdict"] == "ok",
                  f"through the fork server, evaluation {k + 1}: ok ({r['verdict']}: "
                  f"{r.get('reason')})")
            note = r.get("timing_clock_note", "")
            if "samples shared from an evaluation" in note or "reference was dropped" in note:
                had_share += 1
        check(server.close() == 0, "the fork server ended cleanly")
        # The judge got a share (and so ran the reference untimed in most sampled iterations)
        # in at least one of the three evaluations after the first.
        check(had_share >= 1, f"a shared reference reached {had_share} of 3 later evaluations")


if __name__ == "__main__":
    main()
