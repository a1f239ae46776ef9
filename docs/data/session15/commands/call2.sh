#!/usr/bin/env bash
# session 15, device call 2 (issue 14 point 4, and issue 13's verdicts with the runtime
# fallback rule): the whole corpus (all 112, all verdicts) through one fork server with
# building ahead on the CPUs, kforge only (KB's turns would share the GPU's time), the default
# request (fp32, runtime policy). Written under $OUT as it goes.
S=$OUT; mkdir -p $S/suite
t0=$(date +%s)
OUT=$S/suite COMPAT_ARGS="--policy runtime --skip-kb --kforge-builders 8 --min-turn-s 2 --work-dir /tmp/kf-all ${EXTRA:-}" \
  COMPAT_BUDGET_S=${BUDGET:-560} timeout $(( ${BUDGET:-560} + 12 )) bash scripts/gpu_suite.sh compat > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -60 $S/suite/compat_table.txt
