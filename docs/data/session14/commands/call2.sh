#!/usr/bin/env bash
# session 14, device call 2 (issue 14): 33 pure-Python corpus candidates that the device clock
# times, each evaluated 3 times in separate evaluation processes (repeats spread between other
# candidates' turns), KernelBench's harness beside them; then the independent check.
S=/tmp/kf; rm -rf $S; mkdir -p $S/suite
t0=$(date +%s)
ONLY=1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_77,1_92,1_100,2_1,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86,3_28,3_32
OUT=$S/suite COMPAT_ARGS="--policy runtime --repeats 3 --only $ONLY --kb-builders 8 --min-turn-s 2" \
  COMPAT_BUDGET_S=470 CHECK_BUDGET_S=565 timeout 575 bash scripts/gpu_suite.sh compat,check > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -70 $S/suite/compat_table.txt
tail -25 $S/suite.out
tar czf $OUT/all.tgz -C $S .
