#!/usr/bin/env bash
# session 13, device call 2: what call 1's budget left: KB on 36 load_inline candidates (its
# builds made ahead with ModelNew constructed), kforge on 10 load_inline and 25 level-2/3
# pure-Python candidates
S=/tmp/kf; rm -rf $S; mkdir -p $S/suite
t0=$(date +%s)
KFDONE=1_3,1_19,1_25,1_35,1_36,1_49,1_50,1_51,1_60,1_76,1_83,1_84,1_91,1_93,1_97,1_98,2_2,2_4,2_6,2_13,2_16,2_17,2_24,2_35,2_54,2_58
LI=2_71,2_90,2_93,2_97,2_100,3_7,3_8,3_9,3_13,3_49
PP=2_72,2_73,2_75,2_77,2_78,2_79,2_80,2_82,2_83,2_85,2_86,2_87,3_2,3_5,3_19,3_20,3_28,3_30,3_31,3_32,3_33,3_35,3_39,3_41,3_46
OUT=$S/suite COMPAT_ARGS="--policy runtime --only $KFDONE,$LI,$PP --kforge-skip $KFDONE --kb-skip $PP --kforge-builders 5 --kb-builders 9 --min-turn-s 3" \
  COMPAT_BUDGET_S=560 timeout 575 bash scripts/gpu_suite.sh compat > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -60 $S/suite/compat_table.txt
tar czf $OUT/all.tgz -C $S .
