#!/usr/bin/env bash
# session 23, device call 3 (issue 14): does a microsecond program's busy time depend on where
# its inputs lie (placement_probe.py), for the candidates whose device-clock speedup still moved
# most in call 2, and two references; then the engine's GPU unit tests at this commit.
S=$OUT; cd gpu_worker/eval/bench
C=$OLDPWD/.gpu-carry/corpora/cudal1_a100.jsonl
timeout 200 python3 placement_probe.py --corpus $C --tasks 1_100,2_14,2_56,1_12 --program cand \
  > $S/place_cand.jsonl 2> $S/place_cand.err; echo "cand rc=$?" > $S/summary.txt
timeout 110 python3 placement_probe.py --corpus $C --tasks 2_30,1_71 --program ref \
  > $S/place_ref.jsonl 2> $S/place_ref.err; echo "ref rc=$?" >> $S/summary.txt
cd $OLDPWD
OUT=/tmp/kfu timeout 260 bash scripts/gpu_suite.sh unit > $S/unit.out 2>&1; echo "unit rc=$?" >> $S/summary.txt
tail -8 $S/unit.out >> $S/summary.txt
cat $S/summary.txt; grep summary $S/place_*.jsonl; grep -h placement_spread $S/place_*.jsonl | cut -c1-230
