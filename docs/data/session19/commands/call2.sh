#!/usr/bin/env bash
# session 19, device call 2: the corpus's 18 level-3 candidates (16 not run since session 15),
# kforge (runtime policy, builds ahead) side by side with KernelBench's own harness in the same
# call, one GPU turn at a time. Written under /tmp, packed into $OUT/all.tgz at the end.
S=/tmp/kf2; rm -rf $S; mkdir -p $S/compat
t0=$(date +%s)
[ -x build-gpu/gpu_worker/eval/kforge-eval ] || { OUT=$S/suite timeout 200 bash scripts/gpu_suite.sh unit > $S/unit.out 2>&1; }
EVAL=build-gpu/gpu_worker/eval/kforge-eval
left=$(( ${LIMIT:-585} - ($(date +%s)-t0) ))
L3=3_2,3_5,3_7,3_8,3_9,3_13,3_19,3_20,3_28,3_30,3_31,3_32,3_33,3_35,3_39,3_41,3_46,3_49
python3 scripts/corpus_compat.py --eval $EVAL --device cuda --out $S/compat \
  --corpus .gpu-carry/corpora/cudal1_a100.jsonl --kb-harness .gpu-carry/kb_harness/src \
  --policy runtime --only $L3 --kforge-builders 8 --kb-builders 6 --min-turn-s 2 --work-dir /tmp/kf-l3 \
  --budget-s $(( left - 15 )) > $S/compat.log 2>&1
echo "compat rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
python3 - $S/compat/compat.jsonl <<'PY' > $S/verdicts.txt
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["name"], "kforge", r.get("kforge_verdict"), r.get("kforge_rule"),
          "%.1fs" % (r.get("kforge_wall_s") or 0), r.get("kforge_speedup"), "| KB",
          r.get("kb_status"), r.get("kb_correctness"), r.get("kb_speedup"),
          "|", (r.get("kforge_reason") or "")[:200])
PY
cat $S/summary.txt; cat $S/verdicts.txt; head -30 $S/compat/compat_table.txt
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $S/verdicts.txt $S/compat/compat_table.txt $OUT/
