#!/usr/bin/env bash
# session 15, device call 2 (issue 14 points 2-5, and issue 13's verdicts with the runtime
# fallback rule): the whole corpus (all 112, all verdicts) through one fork server with
# building ahead on the CPUs, kforge only (no KernelBench turns or builds on the CPUs, so the
# call clock's spread is measured without them), the default request (fp32, runtime policy);
# each candidate judged ok evaluated 3 times in all (--repeats 3), then the independent check
# on a sample of the ok rows. Written under $OUT as it goes.
S=/tmp/kf2; rm -rf $S; mkdir -p $S/suite
t0=$(date +%s)
OUT=$S/suite COMPAT_ARGS="--policy runtime --skip-kb --kforge-builders 8 --min-turn-s 2 --work-dir /tmp/kf-all --repeats 3 ${EXTRA:-}" \
  COMPAT_BUDGET_S=${BUDGET:-440} CHECK_BUDGET_S=575 timeout 575 bash scripts/gpu_suite.sh compat,check > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -80 $S/suite.out
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $OUT/
