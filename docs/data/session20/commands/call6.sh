#!/usr/bin/env bash
# session 20, device call 6 (as run): the same bare timing after CUPTI traced 5 calls
# (torch.profiler) and was turned off, against without.
P="python3 gpu_worker/eval/bench/call_spread_probe.py --corpus .gpu-carry/corpora/cudal1_a100.jsonl --tasks 1_92,2_39 --procs 2 --samples 200"; timeout 100 $P --cupti-first 2>&1 | tee $OUT/cupti_first.jsonl; timeout 50 $P --procs 1 2>&1 | tee -a $OUT/cupti_first.jsonl
