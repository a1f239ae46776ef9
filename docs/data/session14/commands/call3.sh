#!/usr/bin/env bash
# session 14, device call 3 (issue 14 point 4): throughput on the whole corpus (all 112, all
# verdicts) through one fork server with building ahead on the CPUs, kforge only (KB's turns
# would share the GPU's time), the worker's reference sharing (device clock) on.
S=/tmp/kf; rm -rf $S; mkdir -p $S/suite
t0=$(date +%s)
OUT=$S/suite COMPAT_ARGS="--policy runtime --skip-kb --kforge-builders 10 --min-turn-s 2 ${EXTRA:-}" \
  COMPAT_BUDGET_S=${BUDGET:-560} timeout $(( ${BUDGET:-560} + 12 )) bash scripts/gpu_suite.sh compat > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -50 $S/suite/compat_table.txt
tar czf $OUT/all.tgz -C $S .
