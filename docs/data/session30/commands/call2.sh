#!/usr/bin/env bash
# Session 30, call 2 (after docs/data/session28/commands/call2.sh): session 26's planned
# throughput call (issue 14 point 4) cut to 300 s, then session 29's probes (call3.sh) and
# whether the sandbox can take an IPC namespace, or the candidate refuse System V IPC
# (ipc_namespace_probe.py), all in one device call. Carry .gpu-carry/kernelbench, corpora,
# kb_harness, googletest and cluster.
TOTAL_S=300 bash docs/data/session26/commands/call1_planned.sh
rc=$?
timeout 110 bash docs/data/session29/commands/call3.sh > /dev/null 2>&1
echo "probes: rc=$?"
tail -c 2500 "$OUT/call3_probes.jsonl" 2>/dev/null
timeout 120 python3 gpu_worker/eval/bench/ipc_namespace_probe.py > "$OUT/ipc_namespace.jsonl" 2>&1
echo "ipc namespace probe: rc=$?"
cut -c1-400 "$OUT/ipc_namespace.jsonl"
exit $rc
