#!/usr/bin/env bash
# Planned in session 26 (no device was lent then; not run), call 2 (issue 14 points 2, 5, 6):
# session 25's call 2 again at this session's engine (the slow stop, the warm imports): two kforge
# lanes with GPU turns and KernelBench's harness beside them on the same 32 candidates, 3
# evaluations each, then the independent check on a sample of the ok rows, and the GPU cases for
# the slow stop (sleepy) and the warm imports (a fork server per case). At most 8 files come back
# from $OUT: the logs are packed into logs.tgz. About 560 s. Carry .gpu-carry/kernelbench,
# corpora, kb_harness and googletest.
t0=$(date +%s)
ONLY=1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_86,1_92,1_100,2_1,2_7,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86
S=/tmp/suite-out; mkdir -p $S
OUT=$S CASES_ARGS="--serve --only ${CASES_ONLY:-sleepy,correct}" \
  COMPAT_ARGS="--policy runtime --builds no --only $ONLY --kforge-builders 4 --kb-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3 --kforge-lanes 2 --gpu-turns ${EXTRA_COMPAT_ARGS:-}" \
  COMPAT_BUDGET_S=430 CHECK_BUDGET_S=570 timeout 590 bash scripts/gpu_suite.sh cases,compat,check > $S/suite.out 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $S/suite.out
cp $S/suite.out $S/compat_run.json $S/compat_table.txt $OUT/ 2>/dev/null
gzip -c $S/compat.jsonl > $OUT/compat.jsonl.gz 2>/dev/null
cp $S/check/independent_check.jsonl $OUT/check.jsonl 2>/dev/null
tar czf $OUT/logs.tgz -C $S . 2>/dev/null
grep -E "PASS|FAIL" $S/cases.log
grep -A20 "== repeats" $S/compat_table.txt | head -22
cat $S/check/independent_check_table.txt 2>/dev/null; tail -3 $S/check.log 2>/dev/null
