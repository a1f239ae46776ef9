#!/usr/bin/env bash
# Session 28, call 1 of 2: session 27's call 2 with every timing sample kept, then the speedup
# spread under other statistics of the same samples (scripts/sample_estimators.py) printed last.
# Carry .gpu-carry/kernelbench, corpora, kb_harness and googletest.
EXTRA_COMPAT_ARGS=--keep-samples bash docs/data/session27/commands/call2_planned.sh
rc=$?
for clock in device call; do
  python3 scripts/sample_estimators.py /tmp/suite-out/compat.jsonl --clock $clock --top 6 \
    | tee $OUT/estimators_$clock.txt
done
exit $rc
