#!/usr/bin/env bash
# Planned in session 33 for the next GPU call (not run yet). About 250 s. Carry
# .gpu-carry/kernelbench, corpora and googletest (bash scripts/gpu_carry.sh).
# 1. unit: the engine's GoogleTest binaries (TimingGpuTest.DeviceClockStampsEachStepOfASample
#    has not run on a GPU); hop: tiny_relu with KFORGE_CALL_PROFILE=1, whose profile now has a
#    reference_device line (the judge's steps of a device-clock sample).
# 2. That profile on eight corpus candidates of 3 us to 8 ms (one-shot kforge-eval, device
#    clock): where a device-clock sample's time goes beyond its pre-roll and forward (session
#    32: ~6 ms a kept sample, of which ~1.6 pre-roll and forward; session 33: CUPTI's flushes
#    about 0.25 ms of it).
t0=$(date +%s)
OUT=$OUT/suite bash scripts/gpu_suite.sh unit,hop > "$OUT/suite.out" 2>&1
echo "unit,hop: rc=$? at $(( $(date +%s) - t0 )) s"; tail -8 "$OUT/suite.out"
cat "$OUT/suite/call_profile.txt" 2>/dev/null
mkdir -p "$OUT/profiles" /tmp/kf-prof
python3 - .gpu-carry/corpora/cudal1_a100.jsonl /tmp/kf-prof <<'PY'
import json, sys
want = {"1_44", "1_100", "2_14", "1_92", "2_1", "2_30", "1_71", "1_40"}
for line in open(sys.argv[1]):
    r = json.loads(line)
    name = f"{r['level_id']}_{r['task_id']}"
    if name in want:
        open(f"{sys.argv[2]}/{name}_task.py", "w").write(r["ref_code"])
        open(f"{sys.argv[2]}/{name}_cand.py", "w").write(r["custom_code"])
PY
for t in /tmp/kf-prof/*_task.py; do
  n=$(basename "$t" _task.py)
  KFORGE_CALL_PROFILE=1 timeout 60 build-gpu/gpu_worker/eval/kforge-eval --task "$t" \
    --candidate "/tmp/kf-prof/${n}_cand.py" --device cuda --policy runtime \
    --json "$OUT/profiles/$n.json" > /dev/null 2>&1
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[2], r["verdict"], "preroll", r.get("timing_preroll_ms"), "ms; timing_device_s",
      (r.get("stages") or {}).get("timing_device_s"))
for l in (r.get("output_log") or "").splitlines():
    if l.startswith("kforge-call-profile") and ("reference_device" in l or "traced" in l):
        print(" ", l)' "$OUT/profiles/$n.json" "$n" 2>&1 | tee -a "$OUT/profiles.txt"
done
echo "done at $(( $(date +%s) - t0 )) s"
