#!/usr/bin/env bash
# session 18, device call 1: session 17's engine (4cd5e4c: the own-kernels rule, the end of an
# evaluation after the answer, polling on the channel) on a GPU for the first time.
# The engine build and its unit tests; then, side by side (verdicts only: the two share the
# GPU, so no number of this call is a timing result), the whole case suite through one fork
# server and the whole corpus through kforge (runtime policy, 8 builders ahead; KB's verdicts
# on it are sessions 11 and 13's). Written under /tmp, packed into $OUT/all.tgz at the end.
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
python3 scripts/corpus_compat.py --eval $EVAL --device cuda --out $S/compat \
  --corpus .gpu-carry/corpora/cudal1_a100.jsonl --kb-harness .gpu-carry/kb_harness/src \
  --policy runtime --skip-kb --kforge-builders 8 --min-turn-s 2 --work-dir /tmp/kf-all \
  --budget-s $(( left - 25 )) > $S/compat.log 2>&1
echo "compat rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
wait
python3 - $S/compat/compat.jsonl <<'PY' > $S/verdicts.txt
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["name"], r.get("kforge_verdict"), r.get("kforge_rule"), r.get("kforge_stage"),
          "%.1fs" % (r.get("kforge_wall_s") or 0), (r.get("kforge_reason") or "")[:200])
PY
grep -E "^(FAIL|    reason)|passed" $S/cases.log | tail -30
grep -c "^PASS" $S/cases.log
cat $S/summary.txt
grep -E "fallback|cupy" $S/verdicts.txt | head -40
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $S/verdicts.txt $OUT/
