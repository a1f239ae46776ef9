#!/usr/bin/env bash
# Session 25, call 2 (issue 14 point 4): session 24's call2_planned.sh (two kforge lanes sharing
# the GPU's lock, GPU turns, KernelBench's turns holding it too, the same 32 candidates, 3
# evaluations each), after the fixed hack case (host_compute_beside_preroll: torch.relu has no
# out=, so call 1 saw runtime_error). At most 8 files come back from $OUT: the logs are packed
# into logs.tgz. About 480 s. Carry .gpu-carry/kernelbench, corpora, kb_harness and googletest.
t0=$(date +%s)
ONLY=1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_86,1_92,1_100,2_1,2_7,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86
S=/tmp/suite-out; mkdir -p $S
OUT=$S CASES_ARGS="--serve --only host_compute_beside_preroll" \
  COMPAT_ARGS="--policy runtime --builds no --only $ONLY --kforge-builders 4 --kb-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3 --kforge-lanes 2 --gpu-turns" \
  COMPAT_BUDGET_S=470 timeout 560 bash scripts/gpu_suite.sh cases,compat > $S/suite.out 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $S/suite.out
cp $S/suite.out $S/compat.jsonl $S/compat_run.json $S/compat_table.txt $S/cases.jsonl $OUT/ 2>/dev/null
tar czf $OUT/logs.tgz -C $S . 2>/dev/null
grep -E "PASS|FAIL" $S/cases.log
grep -A20 "== repeats" $S/compat_table.txt | head -22
