#!/usr/bin/env bash
# session 20, device call 5 (as run): the references of four of those tasks timed by a bare
# script, 4 separate processes each, no kforge code, no MPS.
timeout 200 python3 gpu_worker/eval/bench/call_spread_probe.py --corpus .gpu-carry/corpora/cudal1_a100.jsonl --tasks 1_92,2_12,1_17,2_39 --procs 4 --samples 200 2>&1 | tee $OUT/call_spread.jsonl
