#!/usr/bin/env python3
"""How much a clock's speedup moves between repeats under other statistics of the same samples
(issue 14 point 2; docs/decisions.md, "Session 28"): reads a corpus_compat.py run made with
--keep-samples --repeats N and, for each clock, recomputes every ok evaluation's speedup as the
reference's statistic over the candidate's for

  median   what kforge reports (TimingStats.median_ms)
  iqm      the mean of the middle half (25% trimmed each side)
  hd       the Harrell-Davis estimate of the median (a weighted mean of all order statistics)
  mean     the plain mean

then prints, per statistic, the run-to-run spread of each candidate's speedup (max / min - 1
over its repeats) as median, p90 (nearest rank, as compat_table.txt) and max over the
candidates, and the candidates with the largest spread. Also how many device-clock samples lie on the 32 ns tick of CUPTI's timestamps.

  scripts/sample_estimators.py COMPAT.jsonl[.gz] [--clock device|call] [--top 8]
"""
import argparse
import gzip
import json
import math


def quantile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def betainc_weights(n):
    """Harrell-Davis weights of the median for n order statistics: the Beta((n+1)/2, (n+1)/2)
    probability of each interval [(i-1)/n, i/n], by Simpson's rule on a fine grid."""
    a = b = (n + 1) / 2.0
    log_norm = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)

    def pdf(x):
        if x <= 0 or x >= 1:
            return 0.0
        return math.exp((a - 1) * math.log(x) + (b - 1) * math.log(1 - x) - log_norm)

    steps = 16
    weights = []
    for i in range(n):
        lo, hi = i / n, (i + 1) / n
        h = (hi - lo) / steps
        s = pdf(lo) + pdf(hi) + sum((4 if k % 2 else 2) * pdf(lo + k * h) for k in range(1, steps))
        weights.append(s * h / 3)
    total = sum(weights)
    return [w / total for w in weights]


def statistics(samples):
    s = sorted(samples)
    n = len(s)
    k = n // 4
    middle = s[k:n - k] if n - 2 * k > 0 else s
    return {
        "median": quantile(s, 0.5),
        "iqm": sum(middle) / len(middle),
        "hd": sum(w * x for w, x in zip(betainc_weights(n), s)),
        "mean": sum(s) / n,
    }


def evaluations(row):
    """The row's ok evaluations (first pass, then its repeats), unprefixed."""
    first = {k[len("kforge_"):]: v for k, v in row.items()
             if k.startswith("kforge_") and k != "kforge_repeats"}
    return [e for e in [first] + list(row.get("kforge_repeats") or []) if e.get("verdict") == "ok"]


def open_any(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def nearest_rank(sorted_values, q):
    """The nearest-rank q-quantile, as corpus_compat.py's compat_table.txt gives its p90."""
    return sorted_values[min(len(sorted_values), max(1, math.ceil(q * len(sorted_values)))) - 1]


NAMES = ("median", "iqm", "hd", "mean")


def spreads_of(rows, clock):
    """Per statistic, each candidate's speedup spread in % (max / min - 1 over its ok
    evaluations that kept at least 3 samples of each program, where there are 2 or more); the
    rows as (median's spread, name, {statistic: spread}, evaluations); and [device samples on
    CUPTI's 32 ns tick, device samples]."""
    spreads = {k: [] for k in NAMES}
    per_row = []
    ticks = [0, 0]
    for row in rows:
        speedups = {k: [] for k in NAMES}
        for e in evaluations(row):
            ref = (e.get(f"reference_{clock}") or {}).get("samples_ms") or []
            cand = (e.get(f"candidate_{clock}") or {}).get("samples_ms") or []
            if len(ref) < 3 or len(cand) < 3:
                continue
            if clock == "device":
                for x in ref + cand:
                    ticks[0] += abs(x * 1e6 / 32 - round(x * 1e6 / 32)) < 0.01
                    ticks[1] += 1
            r, c = statistics(ref), statistics(cand)
            for k in NAMES:
                if c[k] > 0:
                    speedups[k].append(r[k] / c[k])
        if len(speedups["median"]) < 2:
            continue
        spread = {k: (max(v) / min(v) - 1) * 100 for k, v in speedups.items()}
        for k in NAMES:
            spreads[k].append(spread[k])
        per_row.append((spread["median"], row["name"], spread, len(speedups["median"])))
    return spreads, per_row, ticks


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("compat")
    p.add_argument("--clock", default="device", choices=("device", "call"))
    p.add_argument("--top", type=int, default=8)
    args = p.parse_args()
    with open_any(args.compat) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    spreads, per_row, ticks = spreads_of(rows, args.clock)
    if not per_row:
        print("no candidate with two ok evaluations that kept their samples "
              "(run corpus_compat.py with --keep-samples --repeats 3)")
        return 1
    print(f"== {args.clock} clock: speedup spread between repeats (max/min - 1, %) over "
          f"{len(per_row)} candidates ==")
    print(f"{'statistic':10s} {'median':>8s} {'p90':>8s} {'max':>8s} {'<=1%':>6s}")
    for k in NAMES:
        v = sorted(spreads[k])
        print(f"{k:10s} {quantile(v, 0.5):8.2f} {nearest_rank(v, 0.9):8.2f} {v[-1]:8.2f} "
              f"{sum(x <= 1 for x in v):6d}")
    print("largest spreads by the median (repeats; median / iqm / hd / mean, %):")
    for _, name, spread, n in sorted(per_row, reverse=True)[:args.top]:
        print(f"  {name:8s} {n}  " + " / ".join(f"{spread[k]:.2f}" for k in NAMES))
    if ticks[1]:
        print(f"device samples on CUPTI's 32 ns tick: {ticks[0]} of {ticks[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
