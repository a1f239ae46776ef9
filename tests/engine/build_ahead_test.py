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
     leaves a marker of the failure, and the evaluation after it (CPU mode) is ok without
     running the compiler again (gpu_worker/eval/build_failures.h).
Exits 1 on the first failed check.

  build_ahead_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from check_util import ROOT, TINY_RELU_TASK as TASK, check

CANDIDATE = os.path.join(ROOT, "tests", "engine", "guarded_load_inline.py")
FAILING = os.path.join(ROOT, "tests", "engine", "failing_load_inline.py")


def build_ahead(binary, cache, arch, candidate=CANDIDATE, build_only=True):
    out = os.path.join(cache, "result.json")
    cmd = [binary, "--task", TASK, "--candidate", candidate, "--device", "cpu",
           "--build-timeout", "900", "--cache-dir", cache, "--json", out]
    if build_only:
        cmd.append("--build-only")
    if arch:
        cmd += ["--arch", arch]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TORCH_CUDA_ARCH_LIST="9.0")
    subprocess.run(cmd, check=True, timeout=1200, env=env)
    return json.load(open(out))


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
        check(r["verdict"] == "ok", f"failing build, build ahead: built, the fallback taken "
              f"({r['verdict']}: {r.get('reason')}; {first:.1f} s)")
        markers = [n for d, _, names in os.walk(cache) for n in names
                   if os.path.basename(d) == ".kforge_failed_builds"]
        check(len(markers) == 1, f"failing build: one failure remembered ({markers})")
        r = build_ahead(args.eval, cache, "", FAILING, build_only=False)
        again = r["stages"]["build_s"]
        check(r["verdict"] == "ok", f"failing build, evaluation: ok by the fallback "
              f"({r['verdict']}: {r.get('reason')})")
        check(again < 1 and again < first / 3,
              f"failing build, evaluation: no second compile ({again:.2f} s against {first:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
