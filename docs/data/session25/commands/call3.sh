#!/usr/bin/env bash
# Session 25, call 3 (issue 14 point 4, through the worker): the fixed hack case
# (host_compute_beside_preroll), then scripts/gpu_cluster_corpus.sh: one kforge-worker with two
# lanes on the GPU (GPU turns) and building ahead (prefetch 2), the corpus's 60 pure-Python
# candidates of levels 1-2 (all verdicts), 2 copies each, one `kforge eval` client per task, all
# at once; results read back from PostgreSQL. About 450 s. Carry .gpu-carry/kernelbench,
# corpora, kb_harness, googletest and cluster (scripts/gpu_cluster_bundle.sh build).
t0=$(date +%s)
S=/tmp/s25; rm -rf $S; mkdir -p $S
OUT=$S/suite CASES_ARGS="--serve --only host_compute_beside_preroll" timeout 170 \
  bash scripts/gpu_suite.sh cases > $S/suite.out 2>&1
echo "suite rc=$? at $(( $(date +%s) - t0 )) s"
grep -E "PASS|FAIL" $S/suite/cases.log
OUT=$S/corpus EVAL=build-gpu/gpu_worker/eval/kforge-eval LANES=2 PREFETCH=2 VARIANTS=2 \
  BATCH_TIMEOUT_S=380 timeout $(( 585 - ($(date +%s) - t0) )) \
  bash scripts/gpu_cluster_corpus.sh > $S/corpus.out 2>&1
echo "corpus rc=$? at $(( $(date +%s) - t0 )) s"
cp $S/corpus/corpus_table.txt $S/corpus/evaluations.jsonl $S/suite/cases.jsonl $OUT/ 2>/dev/null
tar czf $OUT/logs.tgz -C $S . 2>/dev/null
tail -5 $S/corpus.out
cat $S/corpus/corpus_table.txt
