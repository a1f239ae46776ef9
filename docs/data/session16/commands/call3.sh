#!/usr/bin/env bash
# session 16, device call 3: (a) the kernel-library fallback exploit and its control on the
# GPU (the H200 has cupy, not pycuda); (b) which kernels CUDA-L1's cupy candidates launch there
# (cupy_probe.py); (c) torch.compile's caches in the candidate's namespace: 2_49, 2_75, 2_85
# evaluated 3 times each (a fresh work dir: the first pass compiles, the repeats should find
# the caches), with 1_92 and 2_12 (whose call clock drifted between call 2's passes).
S=/tmp/kf3; rm -rf $S; mkdir -p $S
t0=$(date +%s)
OUT=$S/cases CASES_ARGS="--serve --policy runtime --correctness-timeout 6 --only kernel_library,unused_kernel_library,probe_escape" \
  timeout 150 bash scripts/gpu_suite.sh cases > $S/cases.out 2>&1
echo "cases rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt; cp $S/summary.txt $OUT/
grep -E "^(PASS|FAIL)|passed" $S/cases.out $S/cases/*.log 2>/dev/null | tail -8
for n in 1_22 1_31 2_37 2_87; do
  timeout 40 python3 docs/data/session16/commands/cupy_probe.py .gpu-carry/corpora/cudal1_a100.jsonl $n >> $S/cupy.jsonl 2>> $S/cupy.err
done
echo "cupy at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt; cat $S/cupy.jsonl | cut -c1-400
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $OUT/
left=$(( ${END_S:-290} - ($(date +%s)-t0) ))
OUT=$S/tc COMPAT_ARGS="--policy runtime --skip-kb --only 2_49,2_75,2_85,1_92,2_12 --kforge-builders 4 --min-turn-s 2 --work-dir /tmp/kf-tc --repeats 3" \
  COMPAT_BUDGET_S=$left timeout $(( left + 10 )) bash scripts/gpu_suite.sh compat > $S/tc.out 2>&1
echo "compile caches rc=$? at $(( $(date +%s)-t0 )) s" | tee -a $S/summary.txt
python3 - $S/tc/compat.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    x = json.loads(l)
    reps = [x] + [{"kforge_" + k: v for k, v in r.items()} for r in x.get("kforge_repeats") or []]
    print(x["name"], [(r.get("kforge_verdict"), r.get("kforge_wall_s"),
                       round((r.get("kforge_stages") or {}).get("build_s", 0), 2),
                       round((r.get("kforge_stages") or {}).get("correctness_candidate_s", 0), 2),
                       (r.get("kforge_candidate_call") or {}).get("median_ms")) for r in reps])
PY
tar czf $OUT/all.tgz -C $S . ; cp $S/summary.txt $OUT/
