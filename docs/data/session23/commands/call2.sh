#!/usr/bin/env bash
# session 23, device call 2 (issue 14): the device clock as the busy time of queued samples.
# The host-work hacks through the GPU case suite (both clocks' minimum times), then the 32
# candidates of session 22's 35 ok pure-Python ones that torch.compile does not take 12-27 s to
# start (2_49, 2_75, 2_85 left out), 3 evaluations each in separate processes, KernelBench's
# harness on the same candidates in the same call, then the independent check on what time is
# left. Everything into $OUT as it goes.
t0=$(date +%s)
ONLY=1_1,1_8,1_12,1_16,1_17,1_18,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_86,1_92,1_100,2_1,2_7,2_12,2_14,2_22,2_25,2_30,2_36,2_39,2_56,2_82,2_83,2_86
OUT=$OUT CASES_ARGS="--serve --only host_compute,joined_side_stream,memo_by_content" \
  COMPAT_ARGS="--policy runtime --builds no --only $ONLY --kforge-builders 4 --kb-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3" \
  COMPAT_BUDGET_S=500 CHECK_BUDGET_S=570 timeout 585 bash scripts/gpu_suite.sh cases,compat,check > $OUT/suite.out 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $OUT/suite.out
tail -12 $OUT/suite.out
grep -A40 "== repeats" $OUT/compat_table.txt | head -45
