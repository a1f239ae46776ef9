#!/usr/bin/env bash
# session 23, device call 4 (issue 14): call 2's repeats benchmark again with fresh inputs at 8
# placements in turn (busy-time device clock as in call 2): the same 32 pure-Python candidates,
# 3 evaluations each in separate processes, KernelBench's harness on the same candidates in the
# same call, then the independent check on what time is left.
t0=$(date +%s)
ONLY=1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_86,1_92,1_100,2_1,2_7,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86
OUT=$OUT COMPAT_ARGS="--policy runtime --builds no --only $ONLY --kforge-builders 4 --kb-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3" \
  COMPAT_BUDGET_S=390 CHECK_BUDGET_S=465 timeout 480 bash scripts/gpu_suite.sh compat,check > $OUT/suite.out 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $OUT/suite.out
tail -4 $OUT/suite.out
grep -A20 "== repeats" $OUT/compat_table.txt | head -22
