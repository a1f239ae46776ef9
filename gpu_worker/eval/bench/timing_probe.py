#!/usr/bin/env python3
"""Which sampling scheme gives a short kernel beside a long one a stable time on this GPU?

Found on the H200 (session 4): with the engine's scheme (L2 flush, device synchronise, events
around one call, synchronise; reference and candidate alternating per sample), a 0.27 ms
LayerNorm candidate beside its 8.4 ms reference ran 7-40% slower right after the reference
than right after itself, in phases of seconds, while the reference moved by 0.4%. This probe
replays that with torch alone: a long program (eager LayerNorm over 268 MB, as
KernelBench's level1/40_LayerNorm) and a short one (two passes over the same tensor, about a
third of a millisecond), timed in rounds of ~2 s by four schemes in turn:

  sync-interleaved  the engine's scheme until session 4
  sync-blocked      blocks of BLOCK samples per program, each after one untimed settle call
  async-interleaved no synchronisation between samples: flush, event, call, event enqueued
                    back to back (synchronised every 2 x BLOCK samples to read the events)
  async-blocked     both
  once-interleaved  a device synchronise after each call only: the flush and the call are
                    enqueued back to back, so the call's launch hides behind the flush
  wait-interleaved  before each sample, wait for the previous sample's end event only

and prints, per scheme, each round's medians and their ratio, then the spread of the ratio
over rounds (max - min) / median. Standard library and torch only.

  timing_probe.py [--seconds 60] [--round 2]
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

BLOCK = 5


class Probe:
    def __init__(self):
        torch.manual_seed(0)
        shape = (16, 64, 256, 256)
        self.sets = [torch.randn(shape, device="cuda") for _ in range(3)]
        self.w = torch.randn(shape[1:], device="cuda")
        self.b = torch.randn(shape[1:], device="cuda")
        props = torch.cuda.get_device_properties(0)
        self.flush = torch.empty(max(2 * props.L2_cache_size, 8 << 20), dtype=torch.uint8,
                                 device="cuda")
        self.k = 0

    def long(self, s):
        return F.layer_norm(self.sets[s], self.sets[s].shape[1:], self.w, self.b)

    def short(self, s):
        x = self.sets[s]
        m = x.mean()
        return torch.sub(x, m)

    def order(self, blocked, n):
        """(program index, timed?) pairs for n timed samples of each program."""
        out = []
        if not blocked:
            for i in range(n):
                pair = [(0, True), (1, True)]
                out += pair if i % 2 == 0 else pair[::-1]
            return out
        blocks = 0
        while sum(t for _, t in out) < 2 * n:
            first = blocks % 4 in (0, 3)  # R C C R R C C R ...
            prog = 0 if first else 1
            out += [(prog, False)] + [(prog, True)] * BLOCK
            blocks += 1
        return out

    def run(self, scheme, seconds):
        blocked = scheme.endswith("blocked")
        sync = scheme.startswith("sync")
        once = scheme.startswith("once")  # no synchronisation between flush and call
        wait = scheme.startswith("wait")  # wait for the previous sample's end event only
        progs = [self.long, self.short]
        times = [[], []]
        t_end = time.time() + seconds
        while time.time() < t_end:
            plan = self.order(blocked, 2 * BLOCK)
            pending = []
            last = None
            for prog, timed in plan:
                self.k += 1
                if wait and last is not None:
                    last.synchronize()
                self.flush.fill_(self.k & 0xFF)
                if sync:
                    torch.cuda.synchronize()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                progs[prog](self.k % 3)
                e1.record()
                last = e1
                if sync or once:
                    torch.cuda.synchronize()
                if timed:
                    pending.append((prog, e0, e1))
            torch.cuda.synchronize()
            for prog, e0, e1 in pending:
                times[prog].append(e0.elapsed_time(e1))
        return times


def spread_line(label, ratios, shorts):
    """One summary line: the ratio's median and spread over rounds, the short program's range."""
    med = statistics.median(ratios)
    return (f"{label} rounds {len(ratios)} ratio median {med:.3f} spread "
            f"{100 * (max(ratios) - min(ratios)) / med:.2f}% short "
            f"{min(shorts):.4f}-{max(shorts):.4f} ms")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--round", type=float, default=2)
    p.add_argument("--json", default="")
    p.add_argument("--schemes", default="sync-interleaved,once-interleaved,wait-interleaved,"
                   "async-interleaved,sync-blocked,async-blocked")
    args = p.parse_args()
    probe = Probe()
    schemes = args.schemes.split(",")
    for s in schemes:
        probe.run(s, 0.3)  # warm-up: allocator, kernels, clocks
    rounds = {s: [] for s in schemes}
    t_end = time.time() + args.seconds
    while time.time() < t_end:
        for s in schemes:
            t_long, t_short = probe.run(s, args.round)
            row = dict(t=round(time.time(), 2), long_ms=statistics.median(t_long),
                       short_ms=statistics.median(t_short), n=len(t_short))
            row["ratio"] = row["long_ms"] / row["short_ms"]
            rounds[s].append(row)
            print(f"{s:18s} long {row['long_ms']:.4f} short {row['short_ms']:.4f} "
                  f"ratio {row['ratio']:.3f} n {row['n']}", flush=True)
    print("== spread of the ratio over rounds ==")
    for s in schemes:
        print(spread_line(f"{s:18s}", [x["ratio"] for x in rounds[s]],
                          [x["short_ms"] for x in rounds[s]]))
    if args.json:
        json.dump(rounds, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
