#!/usr/bin/env bash
# session 22, device call 1 (issue 13): the engine's GPU unit tests and the whole GPU case suite
# through fork servers, in one go, at the current code, no MPS, nothing else on the GPU.
t0=$(date +%s)
OUT=$OUT CASES_ARGS="--serve" timeout 585 bash scripts/gpu_suite.sh unit,cases > $OUT/suite.out 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $OUT/suite.out
tail -45 $OUT/suite.out
grep -cE "^(ok|PASS)" $OUT/cases.log; tail -3 $OUT/cases.log
