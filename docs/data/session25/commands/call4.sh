#!/usr/bin/env bash
# Session 25, call 4 (issue 14 point 4, through the worker), as call 3's second half at
# 01d05a3 (the bundle from 3125072): torch.compile's Inductor compiles in process in the
# worker's children (TORCHINDUCTOR_COMPILE_THREADS=1; in call 3, 2_49 and 2_75 failed with
# "Permission denied: .../bin/python3"), tasks named as their corpus rows, the turns per
# verdict and the build stage's share of them in the table. Then, with the time left, the same with one lane (no
# turns) on the first 30 candidates. About 500 s. Carry as call 3 (the bundle rebuilt).
t0=$(date +%s)
S=/tmp/s25; rm -rf $S; mkdir -p $S
OUT=$S/lanes2 LANES=2 PREFETCH=2 VARIANTS=2 BATCH_TIMEOUT_S=280 timeout 400 \
  bash scripts/gpu_cluster_corpus.sh > $S/lanes2.out 2>&1
echo "lanes 2: rc=$? at $(( $(date +%s) - t0 )) s"
left=$(( 490 - ($(date +%s) - t0) ))
if (( left > 150 )); then
  OUT=$S/lanes1 EVAL=build-gpu/gpu_worker/eval/kforge-eval LANES=1 PREFETCH=2 VARIANTS=2 \
    LIMIT=30 BATCH_TIMEOUT_S=$(( left - 60 )) timeout $(( left - 10 )) \
    bash scripts/gpu_cluster_corpus.sh > $S/lanes1.out 2>&1
  echo "lanes 1: rc=$? at $(( $(date +%s) - t0 )) s"
fi
for d in lanes2 lanes1; do
  [[ -d $S/$d ]] || continue
  cp $S/$d/corpus_table.txt $OUT/${d}_table.txt 2>/dev/null
  cp $S/$d/evaluations.jsonl $OUT/${d}_evaluations.jsonl 2>/dev/null
done
tar czf $OUT/logs.tgz -C $S . 2>/dev/null
cat $S/lanes2/corpus_table.txt $S/lanes1/corpus_table.txt 2>/dev/null
