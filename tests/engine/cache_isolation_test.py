#!/usr/bin/env python3
"""Checks that candidates cannot write into each other's build caches, and that caching still
works (docs/evaluation.md, "Build caches").

With one fresh cache directory, in CPU mode:
  1. an nvrtc candidate (the victim) is evaluated: its cubin lands in its own namespace
     <cache>/c/<key of the task and its source>/nvrtc/;
  2. a shared precompiled header stand-in is put in <cache>/cpp/, as the engine would;
  3. examples/hacks/plants_cache.py, one-shot and through a fork server, tries to write into
     every directory of the cache and over every cubin and PCH, and to chmod each of them
     000: each write and mode change must be refused, and nothing in the cache outside the
     hack's namespace may change (contents, inode, mtime, mode);
  4. the victim's candidate is evaluated with tests/engine/planting_task.py, a task whose code
     plants a failed-build marker and an extension file from the candidate's process: both land
     in the namespace of that task and candidate, nothing in the victim's changes;
  5. the victim is evaluated again: its cubin is a cache hit (the file is not rewritten);
  6. a candidate writes where the environment names torch.compile's caches (Inductor's and
     Triton's): the writes land in its own namespace, <key>/torch_compile/;
  7. a candidate leaves host code (an ELF of this machine) in its namespace: its first
     evaluation is native_code by the write, its second by what the namespace holds (a cubin
     there, the victim's, is not host code).
Every result must report system.cache_isolated. Exits 1 on the first failed check.

  cache_isolation_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import json
import os
import subprocess
import tempfile

import serve_client
from check_util import ROOT, TINY_RELU_TASK as TASK, cache_namespace, check

VICTIM = os.path.join(ROOT, "examples", "candidates", "tiny_relu", "nvrtc_relu.py")
HACK = os.path.join(ROOT, "examples", "hacks", "plants_cache.py")
PLANTING_TASK = os.path.join(ROOT, "tests", "engine", "planting_task.py")
COMPILE_CACHE = os.path.join(ROOT, "tests", "engine", "compile_cache_candidate.py")
PLANTS_HOST_CODE = os.path.join(ROOT, "tests", "engine", "plants_host_code.py")


def evaluate(binary, candidate, cache, task=TASK):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        subprocess.run([binary, "--task", task, "--candidate", candidate, "--device", "cpu",
                        "--cache-dir", cache, "--json", out], check=True, timeout=600)
        return json.load(open(out))


def snapshot(cache, skip):
    """path -> (inode, mtime_ns, bytes, mode) of every file in the cache outside `skip`."""
    files = {}
    for d, _, names in os.walk(cache):
        for n in names:
            p = os.path.join(d, n)
            if not p.startswith(skip + os.sep):
                st = os.stat(p)
                files[p] = (st.st_ino, st.st_mtime_ns, open(p, "rb").read(), st.st_mode)
    return files


def namespace(cache, candidate, task=TASK):
    return cache_namespace(cache, candidate, task)


def check_hack(result, how):
    reason = result.get("reason", "")
    check(result["verdict"] == "runtime_error" and "no plant succeeded" in reason,
          f"{how}: every plant failed ({result['verdict']}: {reason[:300]})")
    check("Permission denied" in reason, f"{how}: the writes were refused by the lock")
    check("chmod" in reason and "Operation not permitted" in reason,
          f"{how}: the mode changes were refused by the metadata filter")
    check(result["system"]["cache_isolated"], f"{how}: the result says cache_isolated")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kforge-iso-") as cache:
        r = evaluate(args.eval, VICTIM, cache)
        check(r["rule"] == "no_gpu" and r["system"]["cache_isolated"],
              f"victim evaluated in CPU mode, isolated ({r['verdict']}/{r['rule']})")
        cubins = [os.path.join(d, n) for d, _, ns in os.walk(namespace(cache, VICTIM))
                  for n in ns if n.endswith(".cubin")]
        check(len(cubins) == 1 and os.path.dirname(cubins[0]).endswith("/nvrtc"),
              f"the victim's cubin is in its own namespace: {cubins}")
        os.makedirs(os.path.join(cache, "cpp", "pch-test"))
        with open(os.path.join(cache, "cpp", "pch-test", "kforge_pch.h.gch"), "wb") as f:
            f.write(b"engine-built precompiled header")
        before = snapshot(cache, namespace(cache, HACK))

        check_hack(evaluate(args.eval, HACK, cache), "one-shot")
        server = serve_client.Server(args.eval, cache)
        check_hack(server.evaluate(task_source=open(TASK).read(),
                                   candidate_source=open(HACK).read(), device="cpu"),
                   "fork server")
        check(server.close() == 0, "the fork server ended cleanly")
        check(snapshot(cache, namespace(cache, HACK)) == before,
              "nothing in the cache outside the hack's namespace changed")

        # A task of another tenant's choosing, paired with the victim's candidate, plants from
        # the candidate's process: it lands in that pair's namespace, never in the victim's.
        victim_before = snapshot(namespace(cache, VICTIM), "/nonexistent")
        r = evaluate(args.eval, VICTIM, cache, task=PLANTING_TASK)
        planted = [os.path.join(d, n) for d, _, ns in os.walk(cache) for n in ns
                   if n.startswith("planted-by-task")]
        check(len(planted) == 2 and all(p.startswith(namespace(cache, VICTIM, PLANTING_TASK) + os.sep)
                                        for p in planted),
              f"the planting task's files are in its own pair's namespace ({r['verdict']}): {planted}")
        check(snapshot(namespace(cache, VICTIM), "/nonexistent") == victim_before,
              "nothing in the victim's namespace changed")

        r = evaluate(args.eval, VICTIM, cache)
        st = os.stat(cubins[0])
        check(r["rule"] == "no_gpu" and (st.st_ino, st.st_mtime_ns) == before[cubins[0]][:2],
              "the victim's second evaluation loaded its cubin from the cache (not rewritten)")
        check("cache namespace" not in r.get("native_code_detail", ""),
              f"a cubin in the namespace is device code, not host code: "
              f"{r.get('native_code_detail')}")

        # torch.compile's caches (Inductor's, Triton's) are the candidate's namespace's too.
        r = evaluate(args.eval, COMPILE_CACHE, cache)
        entries = sorted(os.path.relpath(os.path.join(d, n), namespace(cache, COMPILE_CACHE))
                         for d, _, ns in os.walk(namespace(cache, COMPILE_CACHE)) for n in ns)
        check(r["verdict"] == "ok" and entries == ["torch_compile/inductor/entry",
                                                    "torch_compile/triton/entry"] and
              all(os.stat(os.path.join(namespace(cache, COMPILE_CACHE), "torch_compile", d))
                  .st_mode & 0o777 == 0o777 for d in ("inductor", "triton", "cupy")),
              f"torch.compile's caches are in the candidate's namespace ({r['verdict']}: "
              f"{r.get('reason', '')[:200]}): {entries}")
        check(r["system"]["cache_isolated"], "the torch.compile candidate's result is isolated")

        # Host code an earlier process left in the namespace taints the later ones.
        first, second = (evaluate(args.eval, PLANTS_HOST_CODE, cache) for _ in range(2))
        check(first["verdict"] == "ok" and first.get("native_code") and
              "opened for writing" in first.get("native_code_detail", ""),
              f"the planting process is tainted by its write: {first.get('native_code_detail')}")
        check(second["verdict"] == "ok" and second.get("native_code") and
              "cache namespace holds host code (torch_extensions/planted/libplanted.so)" in
              second.get("native_code_detail", ""),
              f"the next process is tainted by what the namespace holds: "
              f"{second.get('native_code_detail')}")
    print("cache isolation: all checks passed")


if __name__ == "__main__":
    main()
