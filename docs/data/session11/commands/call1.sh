#!/usr/bin/env bash
# session 11, device call 1: sandbox view on GPU (cluster demo), patches_own_timers, 30x3 repeats
S=/tmp/kf; rm -rf $S; mkdir -p $S/demo $S/suite
t0=$(date +%s)
id > $S/id.txt
OUT=$S/demo DEADLINE_S=220 timeout 300 bash scripts/gpu_cluster_demo.sh > $S/demo.out 2>&1; echo "demo rc=$? in $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -45 $S/demo/run.log
ONLY=1_1,1_100,1_12,1_16,1_17,1_18,1_31,1_34,1_39,1_40,1_42,1_44,1_45,1_46,1_61,1_69,1_71,1_72,1_77,1_8,1_92,2_12,2_14,2_22,2_25,2_30,2_36,2_37,2_39,2_56
left=$(( 560 - ($(date +%s)-t0) ))
OUT=$S/suite CASES_ARGS="--only exploits/patches_own_timers" COMPAT_ARGS="--policy runtime --repeats 3 --only $ONLY" \
  COMPAT_BUDGET_S=$(( left - 60 )) CHECK_BUDGET_S=45 timeout $left bash scripts/gpu_suite.sh cases,compat,check > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
tail -60 $S/suite.out
tar czf $OUT/all.tgz -C $S .
