#!/usr/bin/env python3
"""Does a microsecond program's device time depend on where its inputs lie in memory?

Session 23: kforge's device clock (a queued sample's GPU busy time, behind a pre-roll that
flushes L2) moved by 5-9% between processes for programs of 2-12 us (1_100, 2_14, 2_56), by
0.2-0.3 us of their medians, and by about 1% (0.3-0.6 us) for programs of 30-55 us, while a
CUDA graph replay of ten calls in a row (warm L2) moved by 0.2-0.9%. If a process's fixed
placement of its tensors (virtual and physical pages, DRAM channels, TLB reach after a flush)
sets the shift, then within one process the time should differ between copies of the inputs at
different addresses, and a median pooled over several placements should move less between
processes than one placement's.

Per process (a fresh one for each of --procs): the corpus task's Model or the candidate's
ModelNew (--program), --placements K copies of the inputs, each allocated after a spacer of a
different size so that they land at different addresses (all kept alive); --samples rounds, each
timing every placement once in a shuffled order: L2 flushed (a memset of 2x its size), the
device drained, a ~1 ms torch.cuda._sleep pre-roll, then one forward; its GPU busy time (union
of its activities) from torch.profiler's trace. Prints per process the per-placement medians,
their spread, placement 0's median and the pooled median; then per task the spread over the
processes of placement 0's medians against that of the pooled medians.

  placement_probe.py --corpus cudal1_a100.jsonl --tasks 1_100,2_14 [--program cand|ref]
      [--procs 3] [--placements 8] [--samples 30]
"""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile

from call_spread_probe import run_children


def busy_samples(model, sets, samples, flush, seed):
    """Per key of `sets` (name -> inputs), the GPU busy times (ms) of one forward on those
    inputs: `samples` rounds, each timing every set once in an order shuffled by `seed`: L2
    flushed (a memset of `flush`), the device drained, a ~1 ms torch.cuda._sleep pre-roll, one
    forward; its busy time from torch.profiler's trace. The first 3 rounds and samples whose
    work was not queued whole behind the pre-roll are left out."""
    import torch
    from call_spread_probe import preroll_cycles
    from span_probe import split_samples
    with torch.no_grad():
        for s in sets.values():
            model(*s)
        cycles = preroll_cycles()
        rng = random.Random(seed)
        names = []
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            for i in range(samples):
                order = list(sets)
                rng.shuffle(order)
                for k in order:
                    flush.zero_()
                    torch.cuda.synchronize()
                    torch.cuda._sleep(cycles)
                    n = f"kforge_sample_{k}_{i}"
                    with torch.profiler.record_function(n):
                        model(*sets[k])
                    torch.cuda.synchronize()
                    names.append((k, i, n))
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(path)
            parts = split_samples(json.load(open(path)), {n for _, _, n in names})
    busy = {k: [] for k in sets}
    for k, i, n in names:
        if i >= 3 and n in parts and parts[n]["queued"]:
            busy[k].append(parts[n]["busy"])
    return busy


def child(corpus, name, program, placements, samples):
    import torch
    from call_spread_probe import load_program
    model, inputs = load_program(corpus, name, program)
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4,
                        device="cuda")
    keep, sets = [], []
    for p in range(placements):
        keep.append(torch.empty(p * 1_441_792 + 65_536 * (p % 3), dtype=torch.uint8,
                                device="cuda"))
        sets.append([x.clone() if torch.is_tensor(x) else x for x in inputs])
    busy = busy_samples(model, dict(enumerate(sets)), samples, flush, seed=7)
    med = {p: statistics.median(v) for p, v in busy.items() if v}
    pooled = statistics.median([x for v in busy.values() for x in v])
    addrs = [hex(s[0].data_ptr()) for s in sets if torch.is_tensor(s[0])]
    print(json.dumps(dict(task=name, program=program, pooled_ms=round(pooled, 6),
                          first_ms=round(med.get(0, 0), 6),
                          placement_spread=round(max(med.values()) / min(med.values()) - 1, 4),
                          per_placement_ms=[round(med[p], 6) for p in sorted(med)],
                          n=[len(busy[p]) for p in sorted(busy)], addresses=addrs)),
          flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", required=True)
    p.add_argument("--tasks", required=True)
    p.add_argument("--program", default="cand", choices=("ref", "cand"))
    p.add_argument("--procs", type=int, default=3)
    p.add_argument("--placements", type=int, default=8)
    p.add_argument("--samples", type=int, default=30)
    p.add_argument("--child", default="")
    a = p.parse_args()
    if a.child:
        return child(a.corpus, a.child, a.program, a.placements, a.samples)
    for name in a.tasks.split(","):
        cmd = [sys.executable, __file__, "--corpus", a.corpus, "--tasks", name,
               "--program", a.program, "--placements", str(a.placements),
               "--samples", str(a.samples), "--child", name]
        run_children(name, cmd, a.procs, 120, ("first_ms", "pooled_ms"), program=a.program,
                     summary=True)


if __name__ == "__main__":
    main()
