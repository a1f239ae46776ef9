#!/usr/bin/env bash
# Planned for the next device call (issue 14 point 4), not run in session 25 (its device time
# ran out): the corpus through one worker after f2d07b6 (Landlock's REFER granted: torch.compile
# candidates failed with EXDEV in call 4) and b66bf25 (gpu_turn_timeout retried), first with
# two lanes on all 60 pure-Python candidates of levels 1-2, then one lane on the same 60, so
# that both figures are over one set. Build the bundle first (here: bash
# scripts/gpu_cluster_bundle.sh build). About 560 s. Carry .gpu-carry/kernelbench, corpora,
# kb_harness, googletest and cluster.
t0=$(date +%s)
S=/tmp/s26; rm -rf $S; mkdir -p $S
OUT=$S/lanes2 LANES=2 PREFETCH=2 VARIANTS=2 BATCH_TIMEOUT_S=260 timeout 360 \
  bash scripts/gpu_cluster_corpus.sh > $S/lanes2.out 2>&1
echo "lanes 2: rc=$? at $(( $(date +%s) - t0 )) s"
left=$(( 560 - ($(date +%s) - t0) ))
OUT=$S/lanes1 EVAL=build-gpu/gpu_worker/eval/kforge-eval LANES=1 PREFETCH=2 VARIANTS=2 \
  BATCH_TIMEOUT_S=$(( left - 50 )) timeout $(( left - 10 )) \
  bash scripts/gpu_cluster_corpus.sh > $S/lanes1.out 2>&1
echo "lanes 1: rc=$? at $(( $(date +%s) - t0 )) s"
for d in lanes2 lanes1; do
  cp $S/$d/corpus_table.txt $OUT/${d}_table.txt 2>/dev/null
  cp $S/$d/evaluations.jsonl $OUT/${d}_evaluations.jsonl 2>/dev/null
done
tar czf $OUT/logs.tgz -C $S . 2>/dev/null
cat $S/lanes2/corpus_table.txt $S/lanes1/corpus_table.txt 2>/dev/null
