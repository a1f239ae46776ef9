#!/usr/bin/env bash
# session 13, device call 1: a smoke turn, then the 39 load_inline and the 43 other pure-Python
# corpus candidates (every one not compared in session 11) beside KernelBench's harness
S=/tmp/kf; rm -rf $S; mkdir -p $S/smoke $S/suite
t0=$(date +%s)
LI=1_2,1_3,1_19,1_25,1_29,1_35,1_36,1_37,1_49,1_50,1_51,1_60,1_76,1_83,1_84,1_91,1_93,1_97,1_98,2_2,2_4,2_6,2_13,2_16,2_17,2_24,2_35,2_54,2_58,2_71,2_90,2_93,2_97,2_100,3_7,3_8,3_9,3_13,3_49
PP=2_73,2_75,2_77,2_78,2_79,2_80,2_82,2_83,2_85,2_86,2_87,3_2,3_5,3_19,3_20,3_28,3_30,3_31,3_32,3_33,3_35,3_39,3_41,3_46,1_6,1_9,1_13,1_22,1_54,1_56,1_58,1_62,1_68,1_75,1_78,1_86,2_1,2_3,2_7,2_49,2_60,2_66,2_72
# smoke: builds kforge-eval and judges one known-good candidate; stops the call if it is not ok
OUT=$S/smoke COMPAT_ARGS="--policy runtime --skip-kb --only 1_1 --work-dir /tmp/kf-smoke" COMPAT_BUDGET_S=200 \
  timeout 240 bash scripts/gpu_suite.sh compat > $S/smoke.out 2>&1
echo "smoke rc=$? in $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
grep -E "engine build|^ok|1_1" $S/smoke.out | head -5
if ! grep -qE '^ok +1 +1' $S/smoke.out; then
  tail -40 $S/smoke.out; tar czf $OUT/all.tgz -C $S .; exit 1
fi
left=$(( 575 - ($(date +%s)-t0) ))
OUT=$S/suite COMPAT_ARGS="--policy runtime --only $LI,$PP --kforge-builders 6 --kb-builders 8 --min-turn-s 3" \
  COMPAT_BUDGET_S=$(( left - 12 )) timeout $left bash scripts/gpu_suite.sh compat > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -60 $S/suite/compat_table.txt
tar czf $OUT/all.tgz -C $S .
