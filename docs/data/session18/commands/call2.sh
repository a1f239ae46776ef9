#!/usr/bin/env bash
# session 18, device call 2 (session 17 engine: polling on the channel, the end after the answer) (issue 14 points 2-5): the corpus's candidates that build no
# extension, levels 1 and 2 (pure Python: no builds on the CPUs beside the timing), kforge
# only, the default request, each candidate judged ok evaluated 3 times in all in separate
# processes (--repeats 3); then the independent check (now with kforge's numerics and
# process layout: the reference with fp32 convolutions and without the candidate's switches)
# on a sample of the ok rows. Written under /tmp, packed into $OUT/all.tgz.
S=/tmp/kf2; rm -rf $S; mkdir -p $S/suite
t0=$(date +%s)
OUT=$S/suite COMPAT_ARGS="--policy runtime --skip-kb --builds no --skip ${SKIP3:-3_2,3_5,3_19,3_20,3_28,3_30,3_31,3_32,3_33,3_35,3_39,3_41,3_46} --kforge-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3" \
  COMPAT_BUDGET_S=${BUDGET:-430} CHECK_BUDGET_S=570 CHECK_ARGS="--sample 16" timeout 575 bash scripts/gpu_suite.sh compat,check > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -60 $S/suite.out
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $OUT/
