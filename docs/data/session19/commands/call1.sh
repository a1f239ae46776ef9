#!/usr/bin/env bash
# session 19, device call 1: the own-kernels rule read from activity-traced correctness trials
# (native code or not; a kernel library that loaded counts as a build). The engine build and
# its unit tests; then, side by side (verdicts only: the two share the GPU, so no number of
# this call is a timing result), the whole case suite through one fork server and, through
# kforge only (KB's verdicts on them are sessions 11 and 13's), the 43 corpus candidates whose
# source defines kernels (the rule's whole reach). Written under /tmp, packed into
# $OUT/all.tgz at the end.
S=/tmp/kf1; rm -rf $S; mkdir -p $S/suite $S/compat
t0=$(date +%s)
OUT=$S/suite timeout 200 bash scripts/gpu_suite.sh unit > $S/unit.out 2>&1
echo "unit rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -8 $S/unit.out
EVAL=build-gpu/gpu_worker/eval/kforge-eval
left=$(( ${LIMIT:-585} - ($(date +%s)-t0) ))
( KFORGE_CACHE_DIR=/tmp/kforge-cache timeout $(( left - 20 )) python3 tests/engine/run_cases.py \
    --eval $EVAL --device cuda --serve --cache-dir /tmp/kforge-cache --out $S/cases.jsonl \
    > $S/cases.log 2>&1; echo "cases rc=$? at $(( $(date +%s)-t0 )) s" >> $S/summary.txt ) &
KERNELS=1_2,1_3,1_19,1_22,1_25,1_29,1_31,1_35,1_36,1_37,1_49,1_50,1_51,1_60,1_76,1_83,1_84,1_91,1_93,1_97,1_98,2_2,2_4,2_6,2_13,2_16,2_17,2_24,2_35,2_37,2_54,2_58,2_71,2_87,2_90,2_93,2_97,2_100,3_7,3_8,3_9,3_13,3_49
python3 scripts/corpus_compat.py --eval $EVAL --device cuda --out $S/compat \
  --corpus .gpu-carry/corpora/cudal1_a100.jsonl --kb-harness .gpu-carry/kb_harness/src \
  --policy runtime --skip-kb --only $KERNELS --kforge-builders 8 --min-turn-s 2 --work-dir /tmp/kf-all \
  --budget-s $(( left - 25 )) > $S/compat.log 2>&1
echo "compat rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
wait
python3 - $S/compat/compat.jsonl <<'PY' > $S/verdicts.txt
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["name"], r.get("kforge_verdict"), r.get("kforge_rule"), r.get("kforge_stage"),
          "%.1fs" % (r.get("kforge_wall_s") or 0), r.get("kforge_native_code"),
          (r.get("kforge_reason") or "")[:240])
PY
grep -E "^(FAIL|    reason)|passed" $S/cases.log | tail -30
grep -c "^PASS" $S/cases.log
cat $S/summary.txt
cat $S/verdicts.txt
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $S/verdicts.txt $S/cases.log $OUT/
