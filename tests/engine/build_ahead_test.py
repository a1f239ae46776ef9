#!/usr/bin/env python3
"""A GPU worker's build ahead builds the extensions a candidate builds only when
`torch.cuda.is_available()` (many released candidates do), though no GPU is visible to it.

In CPU mode, with nvcc (/usr/local/cuda) and a fresh cache directory for each run:
  1. `--build-only --device cpu --arch sm_90` (what kforge-worker's builders send on a GPU
     worker, TORCH_CUDA_ARCH_LIST set as the worker sets it): built, and the extension's
     shared object is in the candidate's cache namespace;
  2. the same without --arch (a CPU worker's build ahead): built, and no shared object (the
     candidate's guard is left alone where the candidate will never see a GPU);
  3. a candidate whose load_inline build fails and that falls back to PyTorch: its build ahead
     leaves a marker of the failure, and the evaluation after it (CPU mode) replays it without
     running the compiler again (gpu_worker/eval/build_failures.h), and is `rejected` by the
     runtime rule `fallback` (a failed build the candidate went on without and would have used,
     by the probe at its first call), naming the build;
  4. the same candidate with torch's build lock file left in its build directory, as a build
     killed at its limit leaves it: the build runs (and fails, and the fallback is taken) instead
     of waiting for the lock until the build limit; and with another process holding the lock
     and dying without releasing it: the evaluation waits, then builds itself.
Exits 1 on the first failed check.

  build_ahead_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from check_util import ROOT, TINY_RELU_TASK as TASK, cache_namespace, check

CANDIDATE = os.path.join(ROOT, "tests", "engine", "guarded_load_inline.py")
FAILING = os.path.join(ROOT, "tests", "engine", "failing_load_inline.py")


def build_ahead(binary, cache, arch, candidate=CANDIDATE, build_only=True, build_timeout=900):
    out = os.path.join(cache, "result.json")
    cmd = [binary, "--task", TASK, "--candidate", candidate, "--device", "cpu",
           "--build-timeout", str(build_timeout), "--cache-dir", cache, "--json", out]
    if build_only:
        cmd.append("--build-only")
    if arch:
        cmd += ["--arch", arch]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TORCH_CUDA_ARCH_LIST="9.0")
    subprocess.run(cmd, check=True, timeout=1200, env=env)
    return json.load(open(out))


def extensions_dir(cache, candidate):
    """The candidate's TORCH_EXTENSIONS_DIR (gpu_worker/eval/candidate_files.h)."""
    return os.path.join(cache_namespace(cache, candidate), "torch_extensions")


def fallback(r):
    """The runtime rule for a failed build the candidate went on without (runtime_rules.h)."""
    return (r["verdict"] == "rejected" and r.get("rule") == "fallback" and
            "load_inline('kforge_failing_relu')" in r.get("reason", "") and
            "error" in r.get("reason", ""))


def shared_objects(cache):
    return [os.path.join(d, n) for d, _, names in os.walk(cache) for n in names
            if n.endswith(".so")]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as gpu_cache, tempfile.TemporaryDirectory() as cpu_cache:
        r = build_ahead(args.eval, gpu_cache, "sm_90")
        check(r["verdict"] == "ok", f"GPU build ahead: built ({r['verdict']}: {r.get('reason')})")
        sos = shared_objects(gpu_cache)
        check(any("kforge_guarded_relu" in s for s in sos),
              f"GPU build ahead: the guarded extension was built ({sos})")
        check(r["stages"]["build_s"] > 1, f"GPU build ahead: nvcc ran ({r['stages']['build_s']} s)")
        r = build_ahead(args.eval, cpu_cache, "")
        check(r["verdict"] == "ok", f"CPU build ahead: built ({r['verdict']}: {r.get('reason')})")
        sos = shared_objects(cpu_cache)
        check(not sos, f"CPU build ahead: the candidate's guard was left alone ({sos})")
    with tempfile.TemporaryDirectory() as cache:
        r = build_ahead(args.eval, cache, "sm_90", FAILING)
        first = r["stages"]["build_s"]
        # The build ahead makes ModelNew only; the failed build's stand-in is not touched
        # until forward, so the fallback is decided in the evaluation.
        check(r["verdict"] == "ok", f"failing build, build ahead: built, the fallback taken "
              f"({r['verdict']}: {r.get('reason')}; {first:.1f} s)")
        markers = [n for d, _, names in os.walk(cache) for n in names
                   if os.path.basename(d) == ".kforge_failed_builds"]
        check(len(markers) == 1, f"failing build: one failure remembered ({markers})")
        r = build_ahead(args.eval, cache, "", FAILING, build_only=False)
        again = r["stages"]["build_s"]
        check(fallback(r), f"failing build, evaluation: the replayed failure is a fallback too "
              f"({r['verdict']}: {r.get('reason')})")
        check(again < 1 and again < first / 3,
              f"failing build, evaluation: no second compile ({again:.2f} s against {first:.1f} s)")
    with tempfile.TemporaryDirectory() as cache:
        # torch's lock file, as a build killed at its limit leaves it: the next build must not
        # wait for it.
        build_dir = os.path.join(extensions_dir(cache, FAILING), "kforge_failing_relu")
        os.makedirs(build_dir)
        open(os.path.join(build_dir, "lock"), "w").close()
        r = build_ahead(args.eval, cache, "", FAILING, build_only=False, build_timeout=120)
        check(fallback(r) and r["stages"]["build_s"] < 100,
              f"stale build lock: the build ran and failed, the fallback taken "
              f"({r['verdict']}: {r.get('reason')}; {r['stages']['build_s']:.1f} s)")
        check(not os.path.exists(os.path.join(build_dir, "lock")),
              "stale build lock: released after the build")
    with tempfile.TemporaryDirectory() as cache:
        # Another process holds the lock and dies mid-build (it never releases it itself): the
        # evaluation waits for it, then builds (and its failure is remembered), instead of
        # loading whatever the dead holder left.
        build_dir = os.path.join(extensions_dir(cache, FAILING), "kforge_failing_relu")
        os.makedirs(build_dir)
        holder = subprocess.Popen(
            [sys.executable, "-c",
             "import fcntl, os, sys, time\n"
             "fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDONLY, 0o644)\n"
             "fcntl.flock(fd, fcntl.LOCK_EX)\n"
             "print('held', flush=True)\n"
             "time.sleep(8)\n", os.path.join(build_dir, "lock")],
            stdout=subprocess.PIPE, text=True)
        holder.stdout.readline()
        r = build_ahead(args.eval, cache, "", FAILING, build_only=False, build_timeout=120)
        holder.wait()
        markers = [n for d, _, names in os.walk(cache) for n in names
                   if os.path.basename(d) == ".kforge_failed_builds"]
        check(fallback(r) and len(markers) == 1,
              f"a holder that died: the waiting evaluation built itself ({r['verdict']}: "
              f"{r.get('reason')}; markers {markers})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
