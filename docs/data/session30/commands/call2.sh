#!/usr/bin/env bash
# Session 30, call 2 (after docs/data/session28/commands/call2.sh): session 26's planned
# throughput call (issue 14 point 4) cut to 470 s, then session 29's probes (call3.sh) in the
# time left, so that both fit one device call. Carry .gpu-carry/kernelbench, corpora,
# kb_harness, googletest and cluster.
TOTAL_S=470 bash docs/data/session26/commands/call1_planned.sh
rc=$?
timeout 110 bash docs/data/session29/commands/call3.sh > /dev/null 2>&1
echo "probes: rc=$?"
tail -c 3000 "$OUT/call3_probes.jsonl" 2>/dev/null
exit $rc
