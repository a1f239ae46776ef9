#!/usr/bin/env bash
# session 16, device call 4, right after call 3 on the same (warm) machine: 2_49, 2_75, 2_85
# again with call 3's work dir, whose cache now holds their torch.compile caches.
S=/tmp/kf4; mkdir -p $S; tail -c 1500 /tmp/kf3/cupy.err > $OUT/cupy_err_tail.txt
OUT=$S COMPAT_ARGS="--policy runtime --skip-kb --only 2_49,2_75,2_85 --kforge-builders 3 --min-turn-s 2 --work-dir /tmp/kf-tc" \
  COMPAT_BUDGET_S=140 timeout 150 bash scripts/gpu_suite.sh compat > $S/tc2.out 2>&1
cp $S/compat.jsonl $OUT/tc2_compat.jsonl
