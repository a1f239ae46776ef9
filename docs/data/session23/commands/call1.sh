#!/usr/bin/env bash
# session 23, device call 1 (issue 14): is the device clock's between-process tail on
# microsecond programs kforge's or the span method's? The span method without kforge (flushed,
# not flushed, 10 forwards per sample) against graph replay, 4 fresh processes per task, for
# the task's reference and for the candidate.
S=$OUT; cd gpu_worker/eval/bench
C=$OLDPWD/.gpu-carry/corpora/cudal1_a100.jsonl
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $S/smi.txt
timeout 280 python3 call_spread_probe.py --corpus $C --tasks 1_100,2_14,2_30,2_56 --procs 4 \
  --samples 100 --spans > $S/probe_ref.jsonl 2> $S/probe_ref.err
echo "ref rc=$?" >> $S/smi.txt
timeout 250 python3 call_spread_probe.py --corpus $C --tasks 1_100,2_14,2_30,2_56 --procs 3 \
  --samples 100 --spans --program cand > $S/probe_cand.jsonl 2> $S/probe_cand.err
echo "cand rc=$?" >> $S/smi.txt
cat $S/smi.txt; grep spread $S/probe_ref.jsonl $S/probe_cand.jsonl
