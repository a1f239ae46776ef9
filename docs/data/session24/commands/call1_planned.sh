#!/usr/bin/env bash
# Planned for the next device call (issue 14); session 24 had no device time (115 s left, no
# machine could start). Session 23's planned call, unchanged in what it runs (its
# docs/data/session23/commands/next_call_planned.sh: what came after session 23's last device
# call, on the same 32 candidates, 3 evaluations each, KernelBench's harness beside them, the
# host-work hacks, the independent check), with the check's per-row file kept.
# About 520 s. Carry .gpu-carry/kernelbench, corpora, kb_harness and googletest.
t0=$(date +%s)
ONLY=1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_86,1_92,1_100,2_1,2_7,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86
OUT=$OUT CASES_ARGS="--serve --only host_compute,joined_side_stream,memo_by_content" \
  COMPAT_ARGS="--policy runtime --builds no --only $ONLY --kforge-builders 4 --kb-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3" \
  COMPAT_BUDGET_S=500 CHECK_BUDGET_S=570 timeout 585 bash scripts/gpu_suite.sh unit,cases,compat,check > $OUT/suite.out 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $OUT/suite.out
cp $OUT/check/independent_check.jsonl $OUT/check.jsonl 2>/dev/null
tail -12 $OUT/suite.out
grep -A20 "== repeats" $OUT/compat_table.txt | head -22
