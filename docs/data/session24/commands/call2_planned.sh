#!/usr/bin/env bash
# Planned for the device call after call1_planned.sh (issue 14 point 4): GPU turns
# (docs/evaluation.md, "GPU turns"), two kforge lanes sharing the GPU's lock, a KernelBench turn
# holding it too, on the same 32 candidates, 3 evaluations each. Against call 1 (one lane):
# evaluations per GPU-hour (turn seconds are now the lock's), ok wall, and whether the spreads
# and kforge/KB stay as they were with another lane's CUDA contexts made beside each turn.
# About 450 s. Carry as call 1.
t0=$(date +%s)
ONLY=1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_86,1_92,1_100,2_1,2_7,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86
OUT=$OUT COMPAT_ARGS="--policy runtime --builds no --only $ONLY --kforge-builders 4 --kb-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3 --kforge-lanes 2 --gpu-turns" \
  COMPAT_BUDGET_S=520 timeout 585 bash scripts/gpu_suite.sh compat > $OUT/suite.out 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $OUT/suite.out
tail -12 $OUT/suite.out
grep -A20 "== repeats" $OUT/compat_table.txt | head -22
