#!/usr/bin/env bash
# session 20, device call 3: everything under an MPS daemon (gpu_suite.sh MPS=1). (1) The GPU
# case suite's failure modes and exploits through one fork server, one evaluation at a time
# (crashes, hangs, illegal addresses, OOM, floods, escapes, forged results, the channel's
# attacks), each followed by further requests to the same server, with a few honest controls:
# does a crash under MPS (one hardware context for the judge and the candidate) still end as
# the same verdict with the GPU usable? (2) Issue 14's repeats benchmark, session 18 call 2's
# command (pure-Python candidates of levels 1 and 2, kforge only, default request, each ok
# candidate 3 times in separate processes): the call clock's spread and interval coverage
# without the two GPU context switches per call. Written under /tmp, packed into $OUT/all.tgz.
S=/tmp/kf3; rm -rf $S; mkdir -p $S/suite
t0=$(date +%s)
ONLY=crashes,hangs,hung_kernel,illegal_address,gpu_oom,output_flood,fork_bomb,escapes_sandbox
ONLY+=,exploits/reads_device_memory,exploits/reaches_judge,exploits/leaves_process_group
ONLY+=,exploits/early_done,exploits/blocks_channel,exploits/floods_channel,exploits/forged_result
ONLY+=,exploits/patches_own_timers,exploits/decoy_kernel_launched,exploits/cupy_kernel_launched
ONLY+=,exploits/honest_python,tiny_relu/correct,tiny_relu/nvrtc_relu,tiny_relu/cpp_relu
ONLY+=,19_ReLU/nvrtc_vec4,tiny_linear/correct
MPS=1 OUT=$S/suite CASES_ARGS="--serve --jobs 1 --only $ONLY" \
  COMPAT_ARGS="--policy runtime --skip-kb --builds no --skip 3_2,3_5,3_19,3_20,3_28,3_30,3_31,3_32,3_33,3_35,3_39,3_41,3_46 --kforge-builders 4 --min-turn-s 2 --work-dir /tmp/kf-py --repeats 3" \
  COMPAT_BUDGET_S=${BUDGET:-545} timeout 580 bash scripts/gpu_suite.sh cases,compat > $S/suite.out 2>&1
echo "suite rc=$? total $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
pgrep -a nvidia-cuda-mps | tee -a $S/summary.txt
grep -E "^(PASS|FAIL|    reason)" $S/suite/cases.log | cut -c1-220
tail -45 $S/suite.out
python3 - $S/suite/compat.jsonl <<'PY' | tee $S/mps.txt
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
hops = sorted(r["kforge_call_overhead_ms"] for r in rows if r.get("kforge_call_overhead_ms"))
print("hop (call_overhead_ms) median", hops[len(hops) // 2] if hops else None, "n", len(hops))
PY
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $S/suite/compat.jsonl $S/suite/cases.log $OUT/ 2>/dev/null
