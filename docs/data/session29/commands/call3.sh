#!/usr/bin/env bash
# Session 29's call 3 (after docs/data/session28/commands' two): where the independent check's
# disagreements come from (docs/decisions.md, "Session 29"). Carry .gpu-carry/corpora.
# 1. ipc_probe: the same forward on inputs read through CUDA IPC (as kforge's candidate process
#    reads the judge's slots) against local clones: 1_12, 1_40 (candidates +3.5% over the bare
#    graph replay), 2_25 (+8%); 1_86's reference (+5.5%, in the judge: no IPC) as a control.
# 2. placement_probe on 1_71's reference (a cuDNN convolution that moved 3% between processes).
set -u
CORPUS=$PWD/.gpu-carry/corpora/cudal1_a100.jsonl
cd gpu_worker/eval/bench || exit 1
{
  python3 ipc_probe.py --corpus "$CORPUS" --tasks 1_12,1_40,2_25,1_86 --program cand --procs 3
  python3 ipc_probe.py --corpus "$CORPUS" --tasks 1_86 --program ref --procs 3
  python3 placement_probe.py --corpus "$CORPUS" --tasks 1_71 --program ref --procs 3
} 2>&1 | tee "$OUT/call3_probes.jsonl"
