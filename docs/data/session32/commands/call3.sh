#!/usr/bin/env bash
# Needs tree 4c00c3b (KFORGE_NO_LIBRARY_WARMUP and the warm-up were reverted by 4c5436c).
# Session 32, call 3: the library warm-up (docs/evaluation.md, "Library warm-up") on a GPU.
# 1. The engine's GoogleTest binaries (library_warmup_test's GPU case among them) and the GPU
#    cases through the served path.
# 2. What the warm-up saves: session 30's 32 corpus candidates through kforge-eval alone (KB
#    skipped), two lanes, GPU turns, in four runs alternating the default (warm-up) with
#    KFORGE_NO_LIBRARY_WARMUP=1, so that a drift over the call falls on both; paired sums last.
# About 560 s. Carry .gpu-carry/kernelbench, corpora, kb_harness and googletest.
t0=$(date +%s)
S=/tmp/s32; mkdir -p $S
OUT=$S/suite CASES_ARGS="--serve --only sleepy,correct,busy_beside" timeout 200 \
  bash scripts/gpu_suite.sh unit,cases > $S/suite.out 2>&1
echo "unit,cases: rc=$? at $(( $(date +%s) - t0 )) s"; tail -6 $S/suite.out
cp $S/suite.out $OUT/suite.out 2>/dev/null
ONLY=1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_86,1_92,1_100,2_1,2_7,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86
ARGS="--skip-kb --policy runtime --builds no --only $ONLY --kforge-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --kforge-lanes 2 --gpu-turns"
for run in warm1 cold1 warm2 cold2; do
  left=$(( ${TOTAL_S:-560} - ($(date +%s) - t0) ))
  (( left < 60 )) && { echo "$run: not run ($left s left)"; continue; }
  case $run in warm1) budget=$(( left / 4 + 20 ));; cold1) budget=$(( left / 3 ));;
    warm2) budget=$(( left / 2 ));; cold2) budget=$(( left - 10 ));; esac
  if [[ $run == cold* ]]; then export KFORGE_NO_LIBRARY_WARMUP=1; else unset KFORGE_NO_LIBRARY_WARMUP; fi
  OUT=$S/$run COMPAT_ARGS="$ARGS" COMPAT_BUDGET_S=$(( budget - 5 )) timeout $budget \
    bash scripts/gpu_suite.sh compat > $S/$run.out 2>&1
  echo "$run: rc=$? at $(( $(date +%s) - t0 )) s (budget $budget s)"
  cp $S/$run/compat_table.txt $OUT/${run}_table.txt 2>/dev/null
  gzip -c $S/$run/compat.jsonl > $OUT/${run}_compat.jsonl.gz 2>/dev/null
done
unset KFORGE_NO_LIBRARY_WARMUP
tar czf $OUT/logs.tgz -C $S . 2>/dev/null
python3 - "$S" <<'PY'
import json, os, statistics, sys
S = sys.argv[1]
runs = {}
for run in ("warm1", "cold1", "warm2", "cold2"):
    path = os.path.join(S, run, "compat.jsonl")
    rows = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
    runs[run] = {r["name"]: r for r in rows if r.get("kforge_verdict") == "ok"}
    print(f"{run}: {len(rows)} rows, {len(runs[run])} ok")
ran = [r for r in runs if runs[r]]
common = sorted(set.intersection(*(set(runs[r]) for r in ran))) if ran else []
print(f"paired over {len(common)} candidates ok in all of {', '.join(ran)}")
for key in ("library_warmup_s", "correctness_s", "correctness_first_reference_s",
            "correctness_first_candidate_s", "load_task_s", "build_s", "timing_s", "total_s",
            "gpu_turn_s"):
    by = {m: [statistics.mean((runs[r][n].get("kforge_stages") or {}).get(key, 0)
                              for r in ran if r.startswith(m)) for n in common]
          for m in ("warm", "cold")}
    if not common or not by["warm"] or not by["cold"]:
        continue
    sw, sc = sum(by["warm"]), sum(by["cold"])
    print(f"  {key:30s} sum warm-up {sw:7.2f} s, without {sc:7.2f} s (saved {sc - sw:6.2f} s)")
PY
grep -h "evaluations per GPU-hour\|NVML" $S/*/compat_table.txt 2>/dev/null | head -8
