#!/usr/bin/env bash
# session 11, device call 4 (what the budget left): the build-ahead fix on four guarded load_inline candidates
S=/tmp/kf; rm -rf $S; mkdir -p $S/suite
t0=$(date +%s)
OUT=$S/suite COMPAT_ARGS="--policy runtime --skip-kb --only 1_36,1_37,1_49,1_93 --kforge-builders 4 --min-turn-s 2" \
  COMPAT_BUDGET_S=122 timeout 128 bash scripts/gpu_suite.sh compat > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -12 $S/suite/compat_table.txt
tar czf $OUT/all.tgz -C $S .
