#!/usr/bin/env bash
# Ran at 9d7fe89; the overlap and KFORGE_SEQUENTIAL_TRIALS were reverted after it (88cb5d0).
# Session 31, call 2: what overlapping the correctness trials' two calls saves on a GPU
# (docs/evaluation.md, "Correctness", overlapped trials), measured on one card in one call.
# Session 30's 32 corpus candidates through kforge-eval alone (KB skipped), one lane, GPU turns,
# in four runs alternating the engine's default (overlapped) with KFORGE_SEQUENTIAL_TRIALS=1, so
# that a drift over the call falls on both. Each run prints its stage table; the last lines
# compare correctness_s and the whole evaluation. About 520 s. Carry .gpu-carry/kernelbench,
# corpora, kb_harness and googletest.
t0=$(date +%s)
S=/tmp/ab; mkdir -p $S
ONLY=1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_86,1_92,1_100,2_1,2_7,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86
ARGS="--skip-kb --policy runtime --builds no --only $ONLY --kforge-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --kforge-lanes 1 --gpu-turns"
for run in overlap1 sequential1 overlap2 sequential2; do
  left=$(( ${TOTAL_S:-510} - ($(date +%s) - t0) ))
  (( left < 60 )) && { echo "$run: not run ($left s left)"; continue; }
  case $run in overlap1) budget=$(( left / 4 + 60 ));; sequential1) budget=$(( left / 3 ));;
    overlap2) budget=$(( left / 2 ));; sequential2) budget=$(( left - 10 ));; esac
  if [[ $run == sequential* ]]; then export KFORGE_SEQUENTIAL_TRIALS=1; else unset KFORGE_SEQUENTIAL_TRIALS; fi
  OUT=$S/$run COMPAT_ARGS="$ARGS" COMPAT_BUDGET_S=$(( budget - 5 )) timeout $budget \
    bash scripts/gpu_suite.sh compat > $S/$run.out 2>&1
  echo "$run: rc=$? at $(( $(date +%s) - t0 )) s (budget $budget s)"
  cp $S/$run/compat_table.txt $OUT/${run}_table.txt 2>/dev/null
  gzip -c $S/$run/compat.jsonl > $OUT/${run}_compat.jsonl.gz 2>/dev/null
done
unset KFORGE_SEQUENTIAL_TRIALS
tar czf $OUT/logs.tgz -C $S . 2>/dev/null
python3 - "$S" <<'PY'
import json, os, statistics, sys
S = sys.argv[1]
runs = {}
for run in ("overlap1", "sequential1", "overlap2", "sequential2"):
    path = os.path.join(S, run, "compat.jsonl")
    rows = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
    ok = {r["name"]: r for r in rows if r.get("kforge_verdict") == "ok"}
    runs[run] = ok
    ov = [(r.get("kforge_correctness") or {}).get("overlapped_trials", 0) for r in ok.values()]
    print(f"{run}: {len(rows)} rows, {len(ok)} ok, overlapped trials per ok median "
          f"{statistics.median(ov) if ov else '-'}")
# Paired: candidates ok in every run that ran; each mode's mean of its runs.
ran = [r for r in runs if runs[r]]
common = sorted(set.intersection(*(set(runs[r]) for r in ran))) if ran else []
print(f"paired over {len(common)} candidates ok in all of {', '.join(ran)}")
for key in ("correctness_s", "correctness_reference_s", "correctness_candidate_s", "timing_s",
            "total_s", "gpu_turn_s"):
    by_mode = {}
    for mode in ("overlap", "sequential"):
        per = [statistics.mean((runs[r][n].get("kforge_stages") or {}).get(key, 0)
                               for r in ran if r.startswith(mode)) for n in common]
        by_mode[mode] = per
    if not common or not by_mode["overlap"] or not by_mode["sequential"]:
        continue
    so, ss = sum(by_mode["overlap"]), sum(by_mode["sequential"])
    ratios = [o / s for o, s in zip(by_mode["overlap"], by_mode["sequential"]) if s > 0]
    print(f"  {key:26s} sum overlapped {so:7.2f} s, sequential {ss:7.2f} s "
          f"(saved {ss - so:6.2f} s); per candidate overlapped/sequential median "
          f"{statistics.median(ratios) if ratios else float('nan'):.3f}")
PY
grep -h "evaluations per GPU-hour\|per GPU-hour" $S/*/compat_table.txt 2>/dev/null | head -8
