#!/usr/bin/env bash
# session 22, device call 2 (issue 13): the README's demo on the H200 from the cluster bundle
# (PostgreSQL, coordinator, gateway, one sandboxed worker on the GPU, TORCH_CUDA_ARCH_LIST set by
# it), then the 19_ReLU cases through one fork server again with the shared reference's samples
# now listed in full (call 1's one failure, hacks/memo_by_content).
t0=$(date +%s)
OUT=$OUT/demo DEADLINE_S=250 timeout 330 bash scripts/gpu_cluster_demo.sh > $OUT/demo.out 2>&1
echo "demo rc=$? in $(( $(date +%s) - t0 )) s" | tee -a $OUT/summary.txt
tail -50 $OUT/demo/run.log
export TORCH_CUDA_ARCH_LIST=$(python3 -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')
KFORGE_KERNELBENCH=.gpu-carry/kernelbench KFORGE_CACHE_DIR=/tmp/kforge-cache timeout 200 \
  python3 tests/engine/run_cases.py --eval build-gpu/gpu_worker/eval/kforge-eval --device cuda \
  --serve --cache-dir /tmp/kforge-cache --out $OUT/cases.jsonl \
  --only 19_ReLU/,hacks/memo_by_content,hacks/stale_memory,hacks/joined_side_stream > $OUT/cases.log 2>&1
echo "cases rc=$? at $(( $(date +%s) - t0 )) s" | tee -a $OUT/summary.txt
grep -E "^(PASS|FAIL|    reason)|passed" $OUT/cases.log | cut -c1-300
