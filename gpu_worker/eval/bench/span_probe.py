#!/usr/bin/env python3
"""Where does a short program's time vary when it is timed from an idle device?

The engine's sample (drained: flush, device synchronise, start event, call, end event) keeps
every piece of work the call does inside the events, but on the H200 (session 4) a 0.27 ms
LayerNorm candidate beside its 8.4 ms reference varied by up to 40% in phases when the host
ran slow. This probe takes the same sample and, through torch.profiler (CUPTI), splits each
call into:

  pre    host time from entering the call to its first launch API call (the program's own
         host work: must stay in any honest measurement)
  lat    first launch API call to the first GPU activity's start (submission latency)
  span   first GPU activity's start to the last one's end (kernels, copies, memsets, any stream)
  event  the CUDA events' interval (what the engine measures: roughly pre + lat + span)

and prints, per metric, the spread over rounds of the long/short ratio of medians, as
timing_probe.py does for whole schemes. If `lat` carries the noise and `pre + span` is steady,
an engine measuring `pre + span` from CUPTI activity records would be both honest (host work
and all streams counted) and steady. Also compares waiting on the host by blocking
(`--wait sync`, the default) against spinning on the end event (`--wait poll`: every query
is a profiled API call, so keep its rounds short), and can run with the garbage collector off
(`--no-gc`). Standard library and torch only.

  span_probe.py [--seconds 60] [--round 2] [--wait sync|poll|both] [--no-gc] [--json OUT]
"""
import argparse
import bisect
import gc
import json
import os
import statistics
import tempfile
import time

import torch

import timing_probe

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
API_CATS = ("cuda_runtime", "cuda_driver")
METRICS = ("event", "pre", "lat", "span", "pre+span")


def split_samples(trace, names):
    """Per annotation name (one per timed call): pre, lat, span, busy in ms, from a Kineto chrome
    trace (dict with traceEvents). Calls whose GPU work cannot be found are left out."""
    ev = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    gpu = {}
    for e in ev:
        if e.get("cat") in GPU_CATS and "correlation" in e.get("args", {}):
            gpu.setdefault(e["args"]["correlation"], []).append(e)
    # Only the API calls that put work on the GPU (launches, copies, memsets), in time order.
    apis = sorted((e for e in ev if e.get("cat") in API_CATS and
                   e.get("args", {}).get("correlation") in gpu), key=lambda e: e["ts"])
    starts = [e["ts"] for e in apis]
    out = {}
    for a in ev:
        if a.get("cat") != "user_annotation" or a.get("name") not in names:
            continue
        t0, t1 = a["ts"], a["ts"] + a["dur"]
        calls = apis[bisect.bisect_left(starts, t0):bisect.bisect_right(starts, t1)]
        if not calls:
            continue
        work = [g for c in calls for g in gpu[c["args"]["correlation"]]]
        first_gpu = min(g["ts"] for g in work)
        last_gpu = max(g["ts"] + g["dur"] for g in work)
        busy, run_start, run_end = 0.0, None, None  # the work's intervals merged
        for g in sorted(work, key=lambda g: g["ts"]):
            if run_end is None or g["ts"] > run_end:
                busy += (run_end - run_start) if run_end is not None else 0
                run_start, run_end = g["ts"], g["ts"] + g["dur"]
            else:
                run_end = max(run_end, g["ts"] + g["dur"])
        busy += run_end - run_start
        out[a["name"]] = dict(busy=busy / 1e3, pre=(calls[0]["ts"] - t0) / 1e3,
                              lat=(first_gpu - calls[0]["ts"]) / 1e3,
                              span=(last_gpu - first_gpu) / 1e3,
                              # every launch made before the GPU began the work: none of
                              # the host's gaps is inside the span
                              queued=first_gpu >= calls[-1]["ts"] + calls[-1]["dur"])
    return out


class Probe(timing_probe.Probe):
    """timing_probe's pair: the long program (eager LayerNorm over 268 MB, as KernelBench's
    level1/40_LayerNorm) and the short one (about a third of a millisecond)."""

    def round(self, seconds, wait):
        """One round of interleaved drained samples under the profiler: per program, a list of
        per-call metric dicts."""
        progs = [self.long, self.short]
        timed = []
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            t_end = time.time() + seconds
            i = 0
            while time.time() < t_end:
                for prog in ((0, 1) if i % 2 == 0 else (1, 0)):
                    self.k += 1
                    self.flush.fill_(self.k & 0xFF)
                    torch.cuda.synchronize()
                    e0 = torch.cuda.Event(enable_timing=True)
                    e1 = torch.cuda.Event(enable_timing=True)
                    name = f"kforge_probe_{prog}_{self.k}"
                    e0.record()
                    with torch.profiler.record_function(name):
                        progs[prog](self.k % 3)
                    e1.record()
                    if wait == "poll":
                        while not e1.query():
                            pass
                    torch.cuda.synchronize()
                    timed.append((prog, name, e0, e1))
                i += 1
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            parts = split_samples(json.load(open(path)), {n for _, n, _, _ in timed})
        out = [[], []]
        for prog, name, e0, e1 in timed:
            if name not in parts:
                continue
            m = dict(parts[name], event=e0.elapsed_time(e1))
            m["pre+span"] = m["pre"] + m["span"]
            out[prog].append(m)
        return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--round", type=float, default=2)
    # poll: CUPTI records every cudaEventQuery of the spin (thousands per long sample), so the
    # traces grow large and the profiler itself weighs on the spin; use short rounds.
    p.add_argument("--wait", default="sync", choices=("sync", "poll", "both"))
    p.add_argument("--no-gc", action="store_true")
    p.add_argument("--json", default="")
    args = p.parse_args()
    if args.no_gc:
        gc.disable()
    probe = Probe()
    waits = ["sync", "poll"] if args.wait == "both" else [args.wait]
    for w in waits:
        probe.round(0.3, w)  # warm-up: allocator, kernels, clocks, profiler
    rounds = {w: [] for w in waits}
    t_end = time.time() + args.seconds
    while time.time() < t_end:
        for w in waits:
            long_, short = probe.round(args.round, w)
            if not long_ or not short:
                print(f"{w}: no samples matched in the trace", flush=True)
                continue
            row = {"n": len(short)}
            for k in METRICS:
                row[k] = (statistics.median(x[k] for x in long_),
                          statistics.median(x[k] for x in short))
            rounds[w].append(row)
            print(f"wait={w} n={row['n']} " + " ".join(
                f"{k}={row[k][1]:.4f}" for k in METRICS) + " (short, ms)", flush=True)
    print("== spread over rounds of the long/short ratio, and the short program's range ==")
    for w in waits:
        rs = rounds[w]
        if not rs:
            continue
        for k in METRICS:
            ratio = [r[k][0] / r[k][1] for r in rs if r[k][1] > 0]
            if ratio:
                print(timing_probe.spread_line(f"wait={w:4s} {k:9s}", ratio,
                                               [r[k][1] for r in rs]))
    if args.json:
        json.dump(rounds, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
