#!/usr/bin/env python3
"""A GPU worker's build ahead builds the extensions a candidate builds only when
`torch.cuda.is_available()` (many released candidates do), though no GPU is visible to it.

In CPU mode, with nvcc (/usr/local/cuda) and a fresh cache directory for each run:
  1. `--build-only --device cpu --arch sm_90` (what kforge-worker's builders send on a GPU
     worker, TORCH_CUDA_ARCH_LIST set as the worker sets it): built, and the extension's
     shared object is in the candidate's cache namespace;
  2. the same without --arch (a CPU worker's build ahead): built, and no shared object (the
     candidate's guard is left alone where the candidate will never see a GPU).
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


def build_ahead(binary, cache, arch):
    out = os.path.join(cache, "result.json")
    cmd = [binary, "--task", TASK, "--candidate", CANDIDATE, "--device", "cpu", "--build-only",
           "--build-timeout", "900", "--cache-dir", cache, "--json", out]
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
