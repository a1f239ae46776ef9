#!/usr/bin/env python3
"""An A/B of kforge-eval on a GPU, paired by candidate (scripts/gpu_ab.sh): runs of
corpus_compat.py alternating an engine setting on ("on1", "on2", ...) and off ("off1", ...).
Only candidates judged `ok` in every run are compared. Per stage key (StageDurations), each
arm's value for a candidate is the mean over that arm's runs, and the table gives the sums over
the candidates, on and off, and what "on" saved (off - on; negative: it cost). Per run, the sum
of each key too, so that a drift over the call shows. Where an arm ran twice or more, the
device-clock speedup's spread between its runs per candidate (max / min - 1, as
corpus_compat.py's repeatability figures), median and
p90 per arm: whether the setting moves repeatability. And each arm's median device-clock
pre-roll at the end (`timing_preroll_ms`, each candidate's mean over the arm's runs).

  ab_summary.py DIR/on1 DIR/off1 DIR/on2 DIR/off2 [--keys gpu_turn_s,correctness_s,...]

Each DIR holds corpus_compat.py's compat.jsonl; a run's arm is its directory name's prefix.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus_compat import relative_spread, spread_stats  # noqa: E402

KEYS = ("gpu_turn_s", "total_s", "correctness_s", "correctness_first_reference_s",
        "correctness_first_candidate_s", "load_task_s", "build_s", "timing_s",
        "timing_device_s", "timing_trace_s")


def arm(run):
    name = os.path.basename(os.path.normpath(run))
    for a in ("on", "off"):
        if name.startswith(a):
            return a
    raise ValueError(f"{run}: a run's directory name starts with on or off")


def load(run):
    path = os.path.join(run, "compat.jsonl")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {r["name"]: r for r in rows if r.get("kforge_verdict") == "ok"}


def stage(row, key):
    return (row.get("kforge_stages") or {}).get(key, 0) or 0


def summary(runs, keys=KEYS):
    """Lines of the paired comparison; runs: directories in the order they ran."""
    loaded = {r: load(r) for r in runs}
    out = []
    for r, ok in loaded.items():
        if ok is None:
            out.append(f"{os.path.basename(r)}: no rows (not run)")
            continue
        sums = ", ".join(f"{k} {sum(stage(x, k) for x in ok.values()):.2f}" for k in keys[:3])
        out.append(f"{os.path.basename(r)}: {len(ok)} ok; {sums}")
    ran = [r for r, ok in loaded.items() if ok]
    arms = {a: [r for r in ran if arm(r) == a] for a in ("on", "off")}
    if not arms["on"] or not arms["off"]:
        out.append("paired: needs a run of each arm")
        return out
    common = sorted(set.intersection(*(set(loaded[r]) for r in ran)))
    out.append(f"paired over {len(common)} candidates ok in all of "
               f"{', '.join(os.path.basename(r) for r in ran)}")
    for k in keys:
        mean = {a: [statistics.mean(stage(loaded[r][n], k) for r in arms[a]) for n in common]
                for a in arms}
        on, off = sum(mean["on"]), sum(mean["off"])
        if on == 0 and off == 0:
            continue
        out.append(f"  {k:30s} on {on:8.2f} s, off {off:8.2f} s, saved {off - on:7.2f} s"
                   + (f" ({(off - on) / off:+.1%})" if off else ""))
    prerolls = {a: [statistics.mean(loaded[r][n].get("kforge_timing_preroll_ms") or 0
                                    for r in arms[a]) for n in common] for a in arms}
    if common and any(any(v) for v in prerolls.values()):
        out.append("  timing_preroll_ms, median: " + ", ".join(
            f"{a} {statistics.median(v):.3f} ms" for a, v in prerolls.items()))
    spreads = {a: spread_stats(speedup_spreads([loaded[r] for r in arms[a]], common))
               for a in arms}
    if all(spreads.values()):
        out.append("  speedup_device spread between an arm's runs, median / p90: " + ", ".join(
            f"{a} {st['median']:.2%} / {st['p90']:.2%} over {st['count']}"
            for a, st in spreads.items()))
    return out


def speedup_spreads(runs, names):
    """Per candidate with a device-clock speedup in every one of `runs` (two or more), its
    max / min - 1 over them (corpus_compat.py's spread)."""
    if len(runs) < 2:
        return []
    out = []
    for n in names:
        v = [r[n].get("kforge_speedup_device") for r in runs]
        if all(isinstance(x, (int, float)) and x > 0 for x in v):
            out.append(relative_spread(v))
    return out


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--keys", default=",".join(KEYS))
    a = p.parse_args(argv)
    print("\n".join(summary(a.runs, tuple(k for k in a.keys.split(",") if k))))


if __name__ == "__main__":
    main(sys.argv[1:])
