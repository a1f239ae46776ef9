#!/usr/bin/env bash
# session 13, device call 3: what calls 1-2 left: KB on 13 load_inline candidates, kforge on
# 11 level-3 pure-Python candidates and 3_49 (both)
S=/tmp/kf; rm -rf $S; mkdir -p $S/suite
t0=$(date +%s)
KFDONE=1_97,2_24,2_35,2_54,2_58,2_90,2_93,2_97,3_7,3_8,3_9,3_13
KBDONE=3_19,3_20,3_28,3_30,3_31,3_32,3_33,3_35,3_39,3_41,3_46
OUT=$S/suite COMPAT_ARGS="--policy runtime --only $KFDONE,$KBDONE,3_49 --kforge-skip $KFDONE --kb-skip $KBDONE --kforge-builders 2 --kb-builders 12 --min-turn-s 3" \
  COMPAT_BUDGET_S=${BUDGET:-380} timeout $(( ${BUDGET:-380} + 12 )) bash scripts/gpu_suite.sh compat > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -40 $S/suite/compat_table.txt
tar czf $OUT/all.tgz -C $S .
