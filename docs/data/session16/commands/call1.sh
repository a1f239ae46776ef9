#!/usr/bin/env bash
# session 16, device call 1 (issue 13 point 6): the failed-build `fallback` rule with its
# counterfactual probe (first GPU run of it) and the kernel-library imports (cupy), on every
# corpus candidate the reading or kforge called a fallback, and the three honest ones session 15
# rejected (1_37, 2_54, 3_7); kforge only (KB's verdicts on them are from sessions 11 and 13).
# Then the failed-build cases of the suite on the GPU through a fork server. Written under /tmp
# and packed into $OUT/all.tgz at the end (and the summary as it goes).
S=/tmp/kf1; rm -rf $S; mkdir -p $S
t0=$(date +%s)
LIST=1_2,1_3,1_22,1_25,1_29,1_31,1_35,1_36,1_37,1_49,1_50,1_51,1_60,1_76,1_83,1_84,1_91,1_93,1_97,2_2,2_4,2_13,2_16,2_17,2_24,2_35,2_37,2_54,2_58,2_71,2_87,2_90,2_93,2_97,2_100,3_7,3_8,3_9,3_13,3_49
OUT=$S/fb COMPAT_ARGS="--policy runtime --skip-kb --only $LIST --kforge-builders 8 --min-turn-s 2 --work-dir /tmp/kf-fb" \
  COMPAT_BUDGET_S=${BUDGET:-420} timeout 430 bash scripts/gpu_suite.sh compat > $S/fb.out 2>&1
echo "fallbacks rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt; cp $S/summary.txt $OUT/
python3 - $S/fb/compat.jsonl <<'PY' | tee $S/fb_verdicts.txt
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["name"], r.get("kforge_verdict"), r.get("kforge_rule"), r.get("kforge_stage"),
          "%.1fs" % (r.get("kforge_wall_s") or 0), (r.get("kforge_reason") or "")[:150])
PY
left=$(( 585 - ($(date +%s)-t0) ))
(( left > 40 )) && timeout $(( left - 15 )) python3 tests/engine/run_cases.py --eval build-gpu/gpu_worker/eval/kforge-eval \
  --device cuda --serve --policy runtime --correctness-timeout 6 \
  --only cupy_fallback,probe_escape,unused_kernel_library,dead_failed_build,failed_build,second_variant > $S/cases.log 2>&1
echo "cases rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -12 $S/cases.log
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $OUT/
