#!/usr/bin/env python3
"""The slow stop against a candidate that bets on it (docs/evaluation.md, "Stop rule and cap"),
in CPU mode: tests/engine/slow_then_wrong.py sleeps 10 ms a call (the slow stop then ends the
call clock's sampling after 5 pairs) and answers wrong from a chosen call on. Its calls: 5
correctness trials, 3 warm-ups and 5 samples, then the post-timing trial (call 14). Wrong from
a sampled call on (9), it is caught by that call's check (incorrect, timed_outputs); wrong from
the post-timing trial on (14), by that trial (rejected, output_cache). The stop leaves out no
check of a call it makes. (Wrong only from call 15 on, no call sees it: the limit of any stop,
docs/evaluation.md.) Exits 1 on the first failed check.

  slow_stop_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import json
import os
import subprocess
import tempfile

from check_util import ROOT, TINY_RELU_TASK as TASK, check

CANDIDATE = os.path.join(ROOT, "tests", "engine", "slow_then_wrong.py")


def evaluate(binary, wrong_after):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        env = dict(os.environ, KFORGE_TEST_WRONG_AFTER=str(wrong_after))
        subprocess.run([binary, "--task", TASK, "--candidate", CANDIDATE, "--device", "cpu",
                        "--json", out], check=True, timeout=300, env=env,
                       stdout=subprocess.DEVNULL)
        return json.load(open(out))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    honest = evaluate(args.eval, 1000)
    call = honest.get("candidate_call", {})
    check(honest.get("verdict") == "ok" and call.get("n") == 5 and call.get("settled"),
          f"control: never wrong, it is ok, its call clock stopped slow after 5 pairs "
          f"({honest.get('verdict')}, n={call.get('n')})")
    for wrong_after, verdict, rule in ((8, "incorrect", "timed_outputs"),
                                       (13, "rejected", "output_cache")):
        r = evaluate(args.eval, wrong_after)
        check(r.get("verdict") == verdict and r.get("rule") == rule,
              f"wrong from call {wrong_after + 1}: {verdict}/{rule} "
              f"({r.get('verdict')}/{r.get('rule')}: {r.get('reason', '')[:160]})")


if __name__ == "__main__":
    main()
