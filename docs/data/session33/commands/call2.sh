#!/usr/bin/env bash
# Session 33, call 2 (session 31 call 3's command): the corpus through the worker, cut
# to fit the session's last device time: session 26's lanes-2 pass only (60 pure-Python corpus
# candidates of levels 1-2, 2 copies each, one worker, two lanes; build the bundle first:
# bash scripts/gpu_carry.sh && bash scripts/gpu_cluster_bundle.sh build). The first GPU run
# through the worker of torch's ptxas on the program list (2_49, 2_75) and of the candidate
# process's System V filter inside the worker's sandbox. About 320 s. Carry
# .gpu-carry/kernelbench, corpora, kb_harness, googletest and cluster.
t0=$(date +%s)
S=/tmp/s33; rm -rf $S; mkdir -p $S
OUT=$S/lanes2 LANES=2 PREFETCH=2 VARIANTS=2 BATCH_TIMEOUT_S=${BATCH_S:-230} timeout $(( ${BATCH_S:-230} + 70 )) \
  bash scripts/gpu_cluster_corpus.sh > $S/lanes2.out 2>&1
echo "lanes 2: rc=$? at $(( $(date +%s) - t0 )) s"
cp $S/lanes2/corpus_table.txt $OUT/lanes2_table.txt 2>/dev/null
gzip -c $S/lanes2/evaluations.jsonl > $OUT/lanes2_evaluations.jsonl.gz 2>/dev/null
tar czf $OUT/logs.tgz -C $S . 2>/dev/null
cat $S/lanes2/corpus_table.txt 2>/dev/null
tail -5 $S/lanes2.out
