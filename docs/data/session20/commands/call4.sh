#!/usr/bin/env bash
# session 20, device call 4 (as run): under MPS, the 12 candidates of call 3 with the widest
# call-clock spreads, 3 evaluations each, with the channel's polling off
# (KFORGE_CHANNEL_SPIN_US=0): is the spread the two processes' spinning? (No: median 43.6%.)
S=/tmp/kf4; mkdir -p $S; (lscpu | head -25; nproc; cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list) > $S/cpu.txt 2>&1; MPS=1 OUT=$S/suite KFORGE_CHANNEL_SPIN_US=0 COMPAT_ARGS="--policy runtime --skip-kb --only 1_17,2_12,1_92,2_25,2_39,2_86,1_42,1_100,2_14,2_36,1_1,1_16 --kforge-builders 2 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3" COMPAT_BUDGET_S=250 timeout 290 bash scripts/gpu_suite.sh compat > $S/suite.out 2>&1; echo rc=$?; cat $S/cpu.txt; tail -22 $S/suite.out; cp $S/suite/compat.jsonl $OUT/
