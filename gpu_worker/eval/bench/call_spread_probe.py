#!/usr/bin/env python3
"""Does a KernelBench reference's call time move between processes without kforge? (Session 20:
kforge's call-clock medians of the same program moved by up to 2x between evaluations.)

For each named corpus task, N separate processes each build the task's reference model (seed
42, on the GPU) and time `forward` as a caller sees it: host time of one call and a
synchronisation, after a 2x-L2 flush, 10 warm-ups, median of --samples calls. No kforge code.
Prints one JSON line per process and a spread (max/min - 1) of the medians per task.

  call_spread_probe.py --corpus cudal1_a100.jsonl --tasks 1_92,2_12 [--procs 4] [--samples 200]
      [--cupti-first]   (CUPTI's activity tracing on for 5 calls and off again before timing)
      [--spans]         (also the device time, three ways, in the same processes)
      [--program cand]  (the candidate's ModelNew instead of the task's Model)
      [--span-k 10]     (forwards per sample of `spank_ms`)

--spans (session 22: kforge's device clock moved by 2-8% between processes on programs of a
few microseconds, where a bare CUDA-graph replay moved by 0.1-1.9%; is it the method or
kforge?) adds, per process, after the call samples: `span_ms`, kforge's method without kforge
(flush, drain, a `torch.cuda._sleep` pre-roll of about 1 ms holding the GPU while one forward
is launched behind it, the span from the forward's first GPU activity to its last, from
torch.profiler's CUPTI trace; samples whose GPU work began before their last launch are left
out and counted as `span_late`); `span_noflush_ms`, the same without the flush; `graph_ms`, one
CUDA-graph replay of 10 back-to-back calls timed with events behind the same pre-roll, per
call (no flush: warm L2 after the first call, so not comparable with `span_ms` itself, only
its spread between processes is). The spread over processes of each is printed per task.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time


def preroll_cycles():
    """The torch.cuda._sleep argument of a pre-roll of about 1 ms on this GPU."""
    import torch
    torch.cuda._sleep(1000)  # loads the kernel: not in the calibration
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(100_000)  # the GPU busy when e0 is recorded: no launch latency inside
    e0.record()
    torch.cuda._sleep(1_000_000)
    e1.record()
    torch.cuda.synchronize()
    return int(1_000_000 / e0.elapsed_time(e1))


def run_children(name, cmd, procs, timeout_s, keys, **summary):
    """Runs `cmd` (a --child command line) `procs` times, each a fresh process; prints each
    child's JSON line (or its failure, a timeout or a crash: the run goes on) and then, for
    `name`, the spread (max/min - 1) over the processes of each of `keys`."""
    rows = []
    for _ in range(procs):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            print(json.dumps(dict(task=name, error=f"timed out after {timeout_s} s")),
                  flush=True)
            continue
        line = (out.stdout.strip().splitlines() or [""])[-1]
        if out.returncode != 0 or not line.startswith("{"):
            print(json.dumps(dict(task=name, error=f"exit {out.returncode}",
                                  stderr=out.stderr[-600:])), flush=True)
            continue
        print(line, flush=True)
        rows.append(json.loads(line))
    summary = dict(task=name, **summary)
    for k in keys:
        v = [r[k] for r in rows if r.get(k)]
        summary[k] = dict(spread=round(max(v) / min(v) - 1, 4) if v else None, values=v)
    print(json.dumps(summary), flush=True)


def device_times(model, inputs, flush, samples, span_k=10):
    """Per-process medians of the device time of one forward, three ways (see --spans)."""
    import os
    import tempfile
    import torch
    from span_probe import split_samples
    cycles = preroll_cycles()
    out = {}
    for key, flushed, k in (("span_ms", True, 1), ("span_noflush_ms", False, 1),
                            ("spank_ms", True, span_k)):
        names = []
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            for i in range(samples):
                if flushed:
                    flush.zero_()
                torch.cuda.synchronize()
                torch.cuda._sleep(cycles * (1 + k // 2))
                name = f"kforge_span_{key}_{i}"
                with torch.profiler.record_function(name):
                    for _ in range(k):
                        model(*inputs)
                torch.cuda.synchronize()
                names.append(name)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            parts = split_samples(json.load(open(path)), set(names))
        # A sample whose launches were still going on when its GPU work began (the pre-roll
        # ran out under the profiler's overhead) holds launch gaps: counted, left out.
        spans = [parts[n]["span"] / k for n in names[5:]
                 if n in parts and parts[n]["queued"]]
        out[key] = round(statistics.median(spans), 5) if spans else None
        out[key.replace("_ms", "_late")] = sum(1 for n in names[5:]
                                               if n in parts and not parts[n]["queued"])
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                model(*inputs)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(10):
                model(*inputs)
        per_call = []
        for _ in range(max(10, samples // 4)):
            torch.cuda.synchronize()
            torch.cuda._sleep(cycles)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            graph.replay()
            e1.record()
            torch.cuda.synchronize()
            per_call.append(e0.elapsed_time(e1) / 10)
        out["graph_ms"] = round(statistics.median(per_call), 5)
    except Exception as e:  # a forward that cannot be captured
        out["graph_ms"] = None
        out["graph_error"] = repr(e)[:200]
    return out


def load_program(corpus, name, program):
    """The corpus row's reference Model or candidate ModelNew (seed 42, on the GPU) and its
    inputs."""
    import torch
    row = next(d for d in map(json.loads, open(corpus))
               if f"{d['level_id']}_{d['task_id']}" == name)
    ns = {}
    exec(compile(row["ref_code"], "task.py", "exec"), ns)
    if program == "cand":  # the candidate's module beside the task's, as KernelBench loads it
        exec(compile(row["custom_code"], "candidate.py", "exec"), ns)
    torch.manual_seed(42)
    model = ns["Model" if program == "ref" else "ModelNew"](*ns["get_init_inputs"]()).cuda()
    return model, [x.cuda() if torch.is_tensor(x) else x for x in ns["get_inputs"]()]


def child(corpus, name, samples, cupti_first=False, spans=False, program="ref", span_k=10):
    import torch
    model, inputs = load_program(corpus, name, program)
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4,
                        device="cuda")
    with torch.no_grad():
        if cupti_first:  # CUPTI's activity tracing on for a few calls, then off (as kforge's
            # device clock before its call clock)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]):
                for _ in range(5):
                    model(*inputs)
                torch.cuda.synchronize()
        for _ in range(10):
            model(*inputs)
        torch.cuda.synchronize()
        ts = []
        for _ in range(samples):
            flush.zero_()
            torch.cuda.synchronize()
            t = time.perf_counter()
            model(*inputs)
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t) * 1e3)
        extra = device_times(model, inputs, flush, samples, span_k) if spans else {}
    print(json.dumps(dict(task=name, program=program, cupti_first=cupti_first,
                          median_ms=round(statistics.median(ts), 4),
                          first20_ms=round(statistics.median(ts[:20]), 4),
                          last20_ms=round(statistics.median(ts[-20:]), 4), **extra)),
          flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", required=True)
    p.add_argument("--tasks", required=True)
    p.add_argument("--procs", type=int, default=4)
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--cupti-first", action="store_true",
                   help="trace a few calls with CUPTI (torch.profiler) before timing")
    p.add_argument("--spans", action="store_true",
                   help="also the device time of one forward three ways (module docstring)")
    p.add_argument("--program", default="ref", choices=("ref", "cand"),
                   help="time the task's Model (ref) or the candidate's ModelNew (cand)")
    p.add_argument("--span-k", type=int, default=10,
                   help="back-to-back forwards per sample of spank_ms")
    p.add_argument("--child", default="")
    a = p.parse_args()
    if a.child:
        return child(a.corpus, a.child, a.samples, a.cupti_first, a.spans, a.program,
                     a.span_k)
    keys = ["median_ms"] + (["span_ms", "span_noflush_ms", "spank_ms", "graph_ms"]
                            if a.spans else [])
    for name in a.tasks.split(","):
        cmd = ([sys.executable, __file__, "--corpus", a.corpus, "--tasks", name,
                "--samples", str(a.samples), "--program", a.program,
                "--span-k", str(a.span_k), "--child", name]
               + (["--cupti-first"] if a.cupti_first else [])
               + (["--spans"] if a.spans else []))
        run_children(name, cmd, a.procs, 180, keys, program=a.program)


if __name__ == "__main__":
    main()
