#!/usr/bin/env bash
# session 15, device call 1: (a) unit tests and the case suite through one fork server
# (exploits/ with the new failed-build fallbacks and their control, stateful/, tests/,
# requests/, slow_inputs/, hacks/); (b) the TF32 question of issue 13: the corpus candidates
# whose convolutions run in TF32 in their own process (1_77, 2_79, 2_93), the fp32 conv
# controls (2_6, 2_7) and the TF32 matmul hack (1_2), kforge only, three ways: the defaults
# (fp32 numerics, fp32 tolerance 1e-4), numerics "torch" (TF32 convolutions in the judge's
# reference, KernelBench's setting), and KernelBench's tolerance (atol = rtol = 1e-2).
# Everything is written under $OUT as it goes, so a cut-off call still returns what ran.
S=$OUT; mkdir -p $S/suite
t0=$(date +%s)
OUT=$S/suite CASES_ARGS="--serve --correctness-timeout 6 --only exploits/,stateful/,tests/,requests/,slow_inputs/,hacks/" \
  timeout 250 bash scripts/gpu_suite.sh unit,cases > $S/suite.out 2>&1
echo "suite rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
grep -E "^(FAIL|    reason)|passed|^unit|^cases|engine build" $S/suite.out | tail -30
n=3
for v in default torch kbtol; do
  case $v in
    default) X="" ;;
    torch) X="--numerics torch" ;;
    kbtol) X="--atol 1e-2 --rtol 1e-2" ;;
  esac
  left=$(( 575 - ($(date +%s)-t0) ))
  budget=$(( left / n )); (( budget > 120 )) && budget=120
  n=$(( n - 1 ))
  mkdir -p $S/tf32_$v
  OUT=$S/tf32_$v COMPAT_ARGS="--policy runtime --skip-kb --only 1_77,2_79,2_93,2_6,2_7,1_2 --kforge-builders 6 --min-turn-s 2 --work-dir /tmp/kf-tf32 $X" \
    COMPAT_BUDGET_S=$budget timeout $(( budget + 10 )) bash scripts/gpu_suite.sh compat > $S/tf32_$v.out 2>&1
  echo "tf32_$v rc=$? budget $budget at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
  python3 - $S/tf32_$v/compat.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    c = r.get("kforge_correctness") or {}
    print(r["name"], r.get("kforge_verdict"), r.get("kforge_rule"),
          "max_abs", c.get("max_abs_error"), "atol", c.get("atol"),
          "x%.3f" % r["kforge_speedup"] if r.get("kforge_speedup") else "", (r.get("kforge_reason") or "")[:160])
PY
done
