#!/usr/bin/env bash
# Planned for the next device call (issue 14); session 24 had no device time (115 s left, no
# machine could start). Session 23's planned call as it is (what came after session 23's last
# device call, on the same 32 candidates, 3 evaluations each, KernelBench's harness beside them,
# the host-work hacks, the independent check), then the check's per-row file kept in $OUT.
# About 520 s. Carry .gpu-carry/kernelbench, corpora, kb_harness and googletest.
bash docs/data/session23/commands/next_call_planned.sh
cp $OUT/check/independent_check.jsonl $OUT/check.jsonl 2>/dev/null
