#!/usr/bin/env bash
# session 11, device call 3: the 39 load_inline corpus candidates beside KB, build ahead fixed
S=/tmp/kf; rm -rf $S; mkdir -p $S/suite
t0=$(date +%s)
LI=1_2,1_3,1_19,1_25,1_29,1_35,1_36,1_37,1_49,1_50,1_51,1_60,1_76,1_83,1_84,1_91,1_93,1_97,1_98,2_2,2_4,2_6,2_13,2_16,2_17,2_24,2_35,2_54,2_58,2_71,2_90,2_93,2_97,2_100,3_7,3_8,3_9,3_13,3_49
OUT=$S/suite COMPAT_ARGS="--policy runtime --only $LI --kforge-builders 6 --kb-builders 8 --min-turn-s 3" \
  COMPAT_BUDGET_S=345 timeout 365 bash scripts/gpu_suite.sh compat > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -40 $S/suite/compat_table.txt
tar czf $OUT/all.tgz -C $S .
