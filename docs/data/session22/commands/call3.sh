#!/usr/bin/env bash
# session 22, device call 3 (issue 14): session 20 call 3's repeats benchmark (the pure-Python
# candidates of levels 1 and 2, runtime policy, each ok candidate 3 times in separate processes)
# at the current code (call clock first), without MPS, with KernelBench's harness on the same
# candidates in the same call (its turns between kforge's), NVML's utilisation during kforge's
# turns, then the independent check on a sample of the ok rows. Everything into $OUT as it goes.
t0=$(date +%s)
OUT=$OUT COMPAT_ARGS="--policy runtime --builds no --skip 3_2,3_5,3_19,3_20,3_28,3_30,3_31,3_32,3_33,3_35,3_39,3_41,3_46 --kforge-builders 4 --kb-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3" \
  COMPAT_BUDGET_S=480 CHECK_BUDGET_S=565 timeout 585 bash scripts/gpu_suite.sh compat,check > $OUT/suite.out 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $OUT/suite.out
tail -30 $OUT/suite.out
grep -A60 "== corpus compat" $OUT/compat_table.txt | head -90
