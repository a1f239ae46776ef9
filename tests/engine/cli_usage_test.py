#!/usr/bin/env python3
"""kforge-eval's command line: malformed flags end in a usage error (exit 2) that names the
flag, never in an evaluation run with a default put in their place.

  cli_usage_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TASK = os.path.join(ROOT, "examples", "tasks", "tiny", "tiny_relu.py")
CAND = os.path.join(ROOT, "examples", "candidates", "tiny_relu", "correct.py")

# (extra arguments, exit status, text stderr must hold)
CASES = [
    (["--preroll-ms", "abc"], 2, "flag --preroll-ms needs a number, not 'abc'"),
    (["--trials", "3x"], 2, "flag --trials needs a number, not '3x'"),
    (["--atol=inf"], 2, "flag --atol needs a number, not 'inf'"),
    (["--timing-timeout", ""], 2, "flag --timing-timeout needs a number, not ''"),
    (["--no-such-flag", "1"], 2, "unknown flag --no-such-flag"),
    (["--dialect", "fortran"], 2, "unknown dialect fortran"),
    (["--trials"], 2, "flag --trials needs a value"),
    (["--gpu-lock-fd", "5"], 2, "--gpu-lock-fd and --gpu-wait-s are for --serve"),
    (["--clear-dev-shm"], 2, "--clear-dev-shm is for --serve"),
    (["--serve", "stdio", "--gpu-wait-s", "0"], 2, "--gpu-wait-s needs a number of seconds"),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    failed = 0
    for extra, want_rc, want_text in CASES:
        cmd = [args.eval, "--task", TASK, "--candidate", CAND, "--device", "cpu", *extra]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        ok = r.returncode == want_rc and want_text in r.stderr
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {' '.join(extra)}: exit {r.returncode}"
              + ("" if ok else f", stderr: {r.stderr[:300]!r}"))
    r = subprocess.run([args.eval, "--help"], capture_output=True, text=True, timeout=60)
    ok = r.returncode == 0 and "--preroll-ms" in r.stdout
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} --help: exit {r.returncode}")
    print(f"{len(CASES) + 1 - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
