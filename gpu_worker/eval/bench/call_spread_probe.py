#!/usr/bin/env python3
"""Does a KernelBench reference's call time move between processes without kforge? (Session 20:
kforge's call-clock medians of the same program moved by up to 2x between evaluations.)

For each named corpus task, N separate processes each build the task's reference model (seed
42, on the GPU) and time `forward` as a caller sees it: host time of one call and a
synchronisation, after a 2x-L2 flush, 10 warm-ups, median of --samples calls. No kforge code.
Prints one JSON line per process and a spread (max/min - 1) of the medians per task.

  call_spread_probe.py --corpus cudal1_a100.jsonl --tasks 1_92,2_12 [--procs 4] [--samples 200]
      [--cupti-first]   (CUPTI's activity tracing on for 5 calls and off again before timing)
"""
import argparse
import json
import statistics
import subprocess
import sys
import time


def child(corpus, name, samples, cupti_first=False):
    import torch
    row = next(d for d in map(json.loads, open(corpus))
               if f"{d['level_id']}_{d['task_id']}" == name)
    ns = {}
    exec(compile(row["ref_code"], "task.py", "exec"), ns)
    torch.manual_seed(42)
    model = ns["Model"](*ns["get_init_inputs"]()).cuda()
    inputs = [x.cuda() if torch.is_tensor(x) else x for x in ns["get_inputs"]()]
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
    print(json.dumps(dict(task=name, cupti_first=cupti_first,
                          median_ms=round(statistics.median(ts), 4),
                          first20_ms=round(statistics.median(ts[:20]), 4),
                          last20_ms=round(statistics.median(ts[-20:]), 4))), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", required=True)
    p.add_argument("--tasks", required=True)
    p.add_argument("--procs", type=int, default=4)
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--cupti-first", action="store_true",
                   help="trace a few calls with CUPTI (torch.profiler) before timing")
    p.add_argument("--child", default="")
    a = p.parse_args()
    if a.child:
        return child(a.corpus, a.child, a.samples, a.cupti_first)
    for name in a.tasks.split(","):
        medians = []
        for _ in range(a.procs):
            out = subprocess.run([sys.executable, __file__, "--corpus", a.corpus, "--tasks", name,
                                  "--samples", str(a.samples), "--child", name]
                                 + (["--cupti-first"] if a.cupti_first else []),
                                 capture_output=True, text=True, timeout=120)
            line = (out.stdout.strip().splitlines() or ["{}"])[-1]
            print(line, flush=True)
            medians.append(json.loads(line).get("median_ms") or float("nan"))
        print(json.dumps(dict(task=name, spread=round(max(medians) / min(medians) - 1, 4),
                              medians=medians)), flush=True)


if __name__ == "__main__":
    main()
