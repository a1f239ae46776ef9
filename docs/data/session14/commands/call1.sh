#!/usr/bin/env bash
# session 14, device call 1: the fixes of session 13-14 on the H200. (a) corpus candidates the
# fixes concern, kforge only (KB's verdicts are in session 13's data): the four conv3d ones
# (fp32 convolutions in both processes), 3_33 (stateful, in step), 2_66/2_80 (no_work), 1_72
# (race), the five capped ones (host-bound stop); (b) the 1_72 diagnosis; (c) unit tests and
# the case suite (exploits, stateful, tests/, requests/, hacks/) through a fork server.
S=/tmp/kf; rm -rf $S; mkdir -p $S/fix $S/suite
t0=$(date +%s)
OUT=$S/fix COMPAT_ARGS="--policy runtime --skip-kb --only 2_6,2_7,2_79,1_60,3_33,2_66,2_80,1_72,2_93,3_30,3_35,3_39,3_41 --kforge-builders 6 --min-turn-s 2 --work-dir /tmp/kf-fix" \
  COMPAT_BUDGET_S=200 timeout 230 bash scripts/gpu_suite.sh compat > $S/fix.out 2>&1
echo "fix rc=$? in $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -30 $S/fix/compat_table.txt
timeout 60 python3 docs/data/session13/confirm_1_72.py .gpu-carry/corpora/cudal1_a100.jsonl > $S/confirm_1_72.out 2>&1
echo "confirm_1_72 rc=$? in $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -8 $S/confirm_1_72.out
left=$(( 575 - ($(date +%s)-t0) ))
OUT=$S/suite CASES_ARGS="--serve --correctness-timeout 6 --only exploits/,stateful/,tests/,requests/,slow_inputs/,hacks/" \
  timeout $left bash scripts/gpu_suite.sh unit,cases > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
grep -E "^(PASS|FAIL)|passed|reason" $S/suite.out | grep -v "^PASS" | tail -30
tar czf $OUT/all.tgz -C $S .
