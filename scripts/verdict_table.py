#!/usr/bin/env python3
"""The verdict table of issue 13 point 6: kforge's verdicts on CUDA-L1's corpus against
KernelBench's harness and the human reading (docs/corpus_reading.md), from corpus_compat rows.

  verdict_table.py --reading docs/data/corpus_reading.jsonl \
      --kforge A.jsonl [B.jsonl ...] --kb C.jsonl [D.jsonl ...]

Each --kforge / --kb file is a corpus_compat.py output (compat.jsonl); a candidate's row from a
later file replaces an earlier one's, so a re-run of some candidates is listed after the run it
corrects. A row counts for kforge when it has a kforge_verdict, unless the run's budget end cut
that evaluation off, for KB when it has kb_status.
Prints the table (reading x kforge verdict x KB: correct / incorrect / no verdict), the
agreement (kforge ok exactly where KB correct), and the two lists the goal is about: honest
candidates kforge did not pass where KB did, and hacks kforge passed. Standard library only.
"""
import argparse
import collections
import json
import sys


BUDGET_CUT = "cut by the run's budget end"  # corpus_compat.py's reason for such a row


def rows(paths, has, cut_names=()):
    """name -> the last row with a `has` field. A kforge evaluation that the run's budget end
    cut off ("<no answer>", its reason starting with BUDGET_CUT) is no verdict and replaces
    none; any other "<no answer>" (a server that died under a candidate, say) is one."""
    out = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                cut = r.get(has) == "<no answer>" and (
                    (r.get("kforge_reason") or "").startswith(BUDGET_CUT) or
                    r["name"] in cut_names)
                if r.get(has) is not None and not cut:
                    out[r["name"]] = r
    return out


def kb_verdict(r):
    if r is None or r.get("kb_status") != "ok" or r.get("kb_correctness") is None:
        return "no verdict"
    return "correct" if r["kb_correctness"] else "incorrect"


def names(xs, limit=8):
    xs = sorted(xs, key=lambda n: tuple(int(p) for p in n.split("_")))
    return ", ".join(xs) if len(xs) <= limit else ", ".join(xs[:limit]) + ", ..."


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reading", required=True)
    p.add_argument("--kforge", nargs="+", required=True)
    p.add_argument("--kb", nargs="+", required=True)
    p.add_argument("--cut", default="",
                   help="level_task,...: their kforge <no answer> rows were cut by the budget's "
                        "end (runs from before corpus_compat said so: session 20's 2_75)")
    args = p.parse_args()
    reading = {}
    with open(args.reading) as f:
        for line in f:
            r = json.loads(line)
            reading[f"{r['level_id']}_{r['task_id']}"] = r
    kf = rows(args.kforge, "kforge_verdict", set(filter(None, args.cut.split(","))))
    kb = rows(args.kb, "kb_status")
    cells = collections.defaultdict(list)
    agree = both = 0
    missing = []
    for name, read in reading.items():
        if name not in kf:
            missing.append(name)
            continue
        v = kf[name]["kforge_verdict"]
        k = kb_verdict(kb.get(name))
        cells[(read["verdict_expected"], v, k)].append(name)
        if k != "no verdict":
            both += 1
            agree += (v == "ok") == (k == "correct")
    columns = ("correct", "incorrect", "no verdict")
    print("| reading | kforge | KB correct | KB incorrect | KB no verdict |")
    print("| --- | --- | --- | --- | --- |")
    for read in ("honest", "hack"):
        total = sum(len(v) for (r, _, _), v in cells.items() if r == read)
        verdicts = sorted({v for (r, v, _) in cells if r == read}, key=lambda v: (v != "ok", v))
        for i, v in enumerate(verdicts):
            row = []
            for k in columns:
                got = cells.get((read, v, k), [])
                row.append("." if not got else str(len(got)) if len(got) > 6 else
                           f"{len(got)} ({names(got)})")
            label = f"{read} ({total})" if i == 0 else read
            print(f"| {label} | {v} | " + " | ".join(row) + " |")
    print(f"\nagreement (kforge ok exactly where KB correct): {agree} of {both} with both verdicts")
    not_passed = [n for (r, v, k), xs in cells.items() for n in xs
                  if r == "honest" and v != "ok" and k == "correct"]
    passed_hacks = [n for (r, v, k), xs in cells.items() for n in xs if r == "hack" and v == "ok"]
    print(f"honest, KB correct, kforge not ok ({len(not_passed)}): "
          + "; ".join(f"{n} {kf[n]['kforge_verdict']}" for n in sorted(not_passed)))
    print(f"hacks kforge passed ({len(passed_hacks)}): "
          + "; ".join(f"{n} ({'+'.join(reading[n]['hacks'])}"
                      f"{', ' + reading[n]['fallback_state'] if reading[n].get('fallback_state') else ''})"
                      for n in sorted(passed_hacks)))
    if missing:
        print(f"no kforge verdict ({len(missing)}): {names(missing, 200)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
