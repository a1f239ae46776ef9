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
  3. through a fork server that shares the reference (KFORGE_SHARE_REFERENCE=all), whose judges
     run the reference untimed in most iterations, the honest candidate is ok every time;
  4. the trials after the first overlap the candidate's call with the reference's (4 of 5), and
     not with KFORGE_SEQUENTIAL_TRIALS set;
  5. where the reference's output changes its layout between trials (copies of the task and the
     honest candidate with RESHAPE set),
     the overlapped trial is called again in order on both sides, which stay in step: the
     honest candidate is ok, with no overlapped trial and a note saying why.
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


def one_shot(binary, candidate, task=TASK, env=None):
    with tempfile.TemporaryDirectory(prefix="kforge-stateful-") as tmp:
        out = os.path.join(tmp, "result.json")
        subprocess.run([binary, "--task", task, "--candidate", candidate, "--device", "cpu",
                        "--json", out], check=True, timeout=600, env=env)
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

    overlapped = r["correctness"].get("overlapped_trials", 0)
    check(overlapped == r["correctness"]["trials"] - 1 and
          not r["correctness"].get("overlap_note"),
          f"honest: every trial after the first overlapped ({overlapped})")
    r = one_shot(args.eval, HONEST, env=dict(os.environ, KFORGE_SEQUENTIAL_TRIALS="1"))
    check(r["verdict"] == "ok" and r["correctness"].get("overlapped_trials", 0) == 0,
          f"honest, KFORGE_SEQUENTIAL_TRIALS: ok with no overlapped trial ({r['verdict']}, "
          f"{r['correctness'].get('overlapped_trials', 0)})")
    with tempfile.TemporaryDirectory(prefix="kforge-stateful-reshape-") as tmp:
        reshaping = []
        for path in (TASK, HONEST):
            copy = os.path.join(tmp, os.path.basename(path))
            with open(copy, "w") as f:
                f.write(open(path).read().replace("RESHAPE = False", "RESHAPE = True", 1))
            reshaping.append(copy)
        r = one_shot(args.eval, reshaping[1], task=reshaping[0])
    check(r["verdict"] == "ok" and r["correctness"]["trials_passed"] == 5 and
          r["correctness"].get("overlapped_trials", 0) == 0 and
          "laid out unlike the last trial's" in r["correctness"].get("overlap_note", ""),
          f"reshaping: ok, its trials in order after the layout changed ({r['verdict']}: "
          f"{r.get('reason')}; {r['correctness']})")

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
