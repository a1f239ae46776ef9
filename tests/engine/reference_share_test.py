#!/usr/bin/env python3
"""The fork server shares the reference's timing between evaluations of one task
(gpu_worker/eval/reference_share.h, docs/evaluation.md "Sharing the reference"), in CPU mode,
where the call clock is the only clock (KFORGE_SHARE_REFERENCE=all; on a GPU the default shares
the device clock's only):
  1. the first evaluation of tiny_relu times the reference in full (nothing shared), and the
     samples the server asked for do not reach the client;
  2. on tests/engine/steady_task.py (a steady 2 ms reference: CPU timings of tiny_relu's 20 us
     are too noisy to be kept), the first evaluation times the reference in full and each of
     the three to six after it (until one used the share) gets its samples and either uses
     them (its reference's TimingStats say how many, its clock note from when, and it took
     fewer new reference samples than candidate samples; the samples it lists are those its
     statistics describe, an earlier evaluation's first) or drops them (the drift check's 1%
     is tight for CPU timings on a busy machine; the unit tests in timing_test.cc cover both
     outcomes deterministically);
  3. another task's evaluation gets nothing shared;
  4. a client that puts a "reference" of its own in the request (1000 ms, which would make every
     candidate 1000s of times faster) has it cleared, on a fresh server and on the one-shot path,
     and none of its samples appears among those the result lists;
  5. with KFORGE_SHARE_REFERENCE=off, and by default in CPU mode, nothing is shared.
Exits 1 on the first failed check.

  reference_share_test.py --eval build/gpu_worker/eval/kforge-eval
"""
import argparse
import json
import os
import subprocess
import tempfile

import serve_client
from check_util import ROOT, TINY_RELU_TASK as TASK, check

CORRECT = os.path.join(ROOT, "examples", "candidates", "tiny_relu", "correct.py")
CHUNKED = os.path.join(ROOT, "examples", "candidates", "tiny_relu", "torch_chunked.py")
OTHER_TASK = os.path.join(ROOT, "tests", "engine", "planting_task.py")
STEADY_TASK = os.path.join(ROOT, "tests", "engine", "steady_task.py")
STEADY_CANDIDATE = os.path.join(ROOT, "tests", "engine", "steady_candidate.py")


def evaluate(server, candidate, task=TASK, **extra):
    return server.evaluate(task_source=open(task).read(), candidate_source=open(candidate).read(),
                           device="cpu", **extra)


def shared(result):
    return (result.get("reference_call") or {}).get("shared_samples", 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--eval", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kforge-share-") as cache:
        share_all = dict(os.environ, KFORGE_SHARE_REFERENCE="all")
        server = serve_client.Server(args.eval, cache, env=share_all)
        first = evaluate(server, CORRECT)
        check(first["verdict"] == "ok" and shared(first) == 0,
              f"first evaluation: ok, the reference timed in full ({first['verdict']}, "
              f"shared {shared(first)})")
        check(not (first.get("reference_call") or {}).get("samples_ms"),
              "the samples the server asked for are not returned to a client that did not")
        # A steady 2 ms reference: its share survives the drift check (in one evaluation of six
        # at least, whatever else the machine runs).
        first = evaluate(server, STEADY_CANDIDATE, task=STEADY_TASK, keep_samples=True)
        check(first["verdict"] == "ok" and shared(first) == 0,
              f"steady task, first evaluation: ok, timed in full ({first['verdict']})")
        # What the server can have kept: the samples of each evaluation that timed in full.
        full = [first["reference_call"].get("samples_ms", [])]
        used, tried, kept = [], 0, False
        while tried < 6 and not (tried >= 3 and used):
            tried += 1
            r = evaluate(server, STEADY_CANDIDATE, task=STEADY_TASK, keep_samples=True)
            note = r.get("timing_clock_note", "")
            check(r["verdict"] == "ok", f"steady task: ok ({r['verdict']}: {r.get('reason')})")
            got = ("samples shared from an evaluation" in note) != ("reference was dropped" in note)
            # The server keeps only a precise full timing (relative error of its median at most
            # 1%), and keeps it for the evaluations after: until one was kept (a loaded machine
            # can delay that) there is nothing to hand on; once one was, every evaluation gets it.
            check(got or not kept,
                  f"steady task: the judge got the server's samples and used or dropped them: "
                  f"{note!r}")
            kept = kept or got
            if shared(r):
                used.append(r)
            else:
                full.append(r["reference_call"].get("samples_ms", []))
        print(f"steady task: the share used in {len(used)} of {tried} (dropped for drift "
              f"otherwise)")
        check(bool(used), f"steady task: the share was used in at least one of {tried}")
        for r in used:
            ref, cnd = r["reference_call"], r["candidate_call"]
            new = ref["n"] - shared(r)
            check("samples shared from an evaluation" in r.get("timing_clock_note", "") and
                  8 <= new < cnd["n"] and abs(ref["median_ms"] / 2.0 - 1) < 0.2,
                  f"steady task: {shared(r)} shared and {new} new reference samples against "
                  f"{cnd['n']} candidate samples, reference median {ref['median_ms']:.3f} ms: "
                  f"{r.get('timing_clock_note')!r}")
            # The samples returned are those the statistics describe, the shared ones first, as
            # an earlier evaluation measured them (session 22: only the new ones were listed,
            # under an `n` that counted both).
            samples = ref.get("samples_ms", [])
            check(samples[:shared(r)] in full,
                  f"steady task: the first {shared(r)} samples listed are an earlier "
                  f"evaluation's, in its order")
            listed = sorted(samples)
            mid = len(listed) // 2
            median = (listed[mid] if len(listed) % 2 else (listed[mid - 1] + listed[mid]) / 2) \
                if listed else float("nan")
            check(len(listed) == ref["n"] and abs(median - ref["median_ms"]) < 1e-9,
                  f"steady task: {len(listed)} samples listed for n={ref['n']} "
                  f"({shared(r)} shared), their median {median:.6f} ms, the stated "
                  f"{ref['median_ms']:.6f} ms")
        other = evaluate(server, CORRECT, task=OTHER_TASK)
        check(other["verdict"] == "ok" and shared(other) == 0,
              f"another task: nothing shared ({other['verdict']}, shared {shared(other)})")
        check(server.close() == 0, "the fork server ended cleanly")

        forged = [1000.0] * 40
        fresh = serve_client.Server(args.eval, cache, env=share_all)
        r = evaluate(fresh, CORRECT, shared_reference_call_ms=forged, keep_samples=True)
        check(r["verdict"] == "ok" and shared(r) == 0 and r["reference_call"]["median_ms"] < 100
              and "shared" not in r.get("timing_clock_note", ""),
              f"a client's shared reference is cleared by the server (shared {shared(r)}, "
              f"reference median {r['reference_call']['median_ms']:.4f} ms)")
        # Nor does it reach the samples a result lists (they list shared ones first, session 22).
        listed = r["reference_call"].get("samples_ms", [])
        check(listed and 1000.0 not in listed,
              f"and none of its samples is listed ({len(listed)} listed)")
        fresh.close()
        request = os.path.join(cache, "request.pb")
        with open(request, "wb") as f:
            f.write(serve_client.encode_request(open(TASK).read(), open(CORRECT).read(),
                                                device="cpu", shared_reference_call_ms=forged,
                                                keep_samples=True))
        out = subprocess.run([args.eval, "--request", request, "--cache-dir", cache],
                             capture_output=True, timeout=600)
        r = json.loads(out.stdout)
        check(r["verdict"] == "ok" and shared(r) == 0 and r["reference_call"]["median_ms"] < 100
              and "shared" not in r.get("timing_clock_note", ""),
              f"and by the one-shot path (shared {shared(r)})")
        listed = r["reference_call"].get("samples_ms", [])
        check(listed and 1000.0 not in listed,
              f"and none of its samples is listed there ({len(listed)} listed)")

        off = serve_client.Server(args.eval, cache, env=dict(os.environ, KFORGE_SHARE_REFERENCE="off"))
        evaluate(off, CORRECT)
        r = evaluate(off, CORRECT)
        check(r["verdict"] == "ok" and shared(r) == 0 and "shared" not in r.get("timing_clock_note", ""),
              "KFORGE_SHARE_REFERENCE=off: nothing shared")
        off.close()
        default = serve_client.Server(args.eval, cache)
        evaluate(default, CORRECT)
        r = evaluate(default, CORRECT)
        check(r["verdict"] == "ok" and shared(r) == 0 and "shared" not in r.get("timing_clock_note", ""),
              "the default (the device clock's only): nothing shared in CPU mode")
        default.close()
    print("reference sharing: all checks passed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
