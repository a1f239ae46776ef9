#!/usr/bin/env bash
# Planned in session 26 (no device was lent then; not run), call 1 (issue 14 point 4, through the
# worker): session 25's planned call (next_call_planned.sh) after the slow stop (032ae26) and the
# fork server's warm imports, with Landlock's REFER (f2d07b6) on a GPU for the first time: all 60
# pure-Python corpus candidates of levels 1-2, 2 copies each, through one worker with two lanes,
# then the warm-imports benchmark on CUDA, then with one lane on the same 120 (the time left).
# Build the bundle first (bash scripts/gpu_cluster_bundle.sh build). About 560 s. Carry
# .gpu-carry/kernelbench, corpora, kb_harness, googletest and cluster.
t0=$(date +%s)
S=/tmp/s26; rm -rf $S; mkdir -p $S
OUT=$S/lanes2 LANES=2 PREFETCH=2 VARIANTS=2 BATCH_TIMEOUT_S=260 timeout 360 \
  bash scripts/gpu_cluster_corpus.sh > $S/lanes2.out 2>&1
echo "lanes 2: rc=$? at $(( $(date +%s) - t0 )) s"
# What the warm imports save on this machine (two fork servers, one without them; CUDA).
timeout 90 python3 gpu_worker/eval/bench/warm_imports_bench.py \
  --eval build-gpu/gpu_worker/eval/kforge-eval --device cuda --n 4 > $S/warm_bench.txt 2>&1
echo "warm imports bench: rc=$? at $(( $(date +%s) - t0 )) s"
left=$(( ${TOTAL_S:-570} - ($(date +%s) - t0) ))
if (( left > 120 )); then
  OUT=$S/lanes1 EVAL=build-gpu/gpu_worker/eval/kforge-eval LANES=1 PREFETCH=2 VARIANTS=2 \
    BATCH_TIMEOUT_S=$(( left - 50 )) timeout $(( left - 10 )) \
    bash scripts/gpu_cluster_corpus.sh > $S/lanes1.out 2>&1
  echo "lanes 1: rc=$? at $(( $(date +%s) - t0 )) s"
fi
for d in lanes2 lanes1; do
  [[ -d $S/$d ]] || continue
  cp $S/$d/corpus_table.txt $OUT/${d}_table.txt 2>/dev/null
  gzip -c $S/$d/evaluations.jsonl > $OUT/${d}_evaluations.jsonl.gz 2>/dev/null
done
cp $S/warm_bench.txt $OUT/ 2>/dev/null
tar czf $OUT/logs.tgz -C $S . 2>/dev/null
cat $S/warm_bench.txt 2>/dev/null
cat $S/lanes2/corpus_table.txt $S/lanes1/corpus_table.txt 2>/dev/null
tail -5 $S/lanes2.out $S/lanes1.out 2>/dev/null
