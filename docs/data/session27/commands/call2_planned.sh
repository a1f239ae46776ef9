#!/usr/bin/env bash
# Planned in session 27 (no device was lent in sessions 26 and 27; not run), call 2 (issue 14
# points 2, 5, 6): session 26's call2_planned.sh at this session's engine (the reference alone,
# the candidate's scheduling calls refused, the refitted call-clock constant), with the busy
# exploit among the GPU cases and `vmstat 1` beside it for steal time (against the candidate
# process's bimodal claims: docs/decisions.md, "Session 27"); vmstat.log goes into its logs.tgz.
# About 560 s. Carry .gpu-carry/kernelbench, corpora, kb_harness and googletest.
mkdir -p /tmp/suite-out
vmstat -t 1 > /tmp/suite-out/vmstat.log 2>&1 &
vm=$!
CASES_ONLY=sleepy,correct,busy_beside bash docs/data/session26/commands/call2_planned.sh
rc=$?
kill $vm
exit $rc
