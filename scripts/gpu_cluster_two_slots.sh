#!/usr/bin/env bash
# The two-slot proof: one kforge-worker with two slots runs two evaluations at the same time,
# each on its own GPU. On a machine with the bundle of scripts/gpu_cluster_bundle.sh
# (.gpu-carry/cluster/kforge-cluster.tar.xz) it:
#   1. unpacks the bundle into $WORK (coordinator, worker, CLI, PostgreSQL 15 and libraries);
#   2. builds kforge-eval with scripts/gpu_suite.sh's build step (build-gpu/), unless $EVAL
#      names one;
#   3. starts PostgreSQL (as nobody when root: it refuses root), the coordinator and ONE
#      worker with two slots (--device cuda: one per GPU; DEVICE=cpu: --device cpu --slots 2);
#   4. evaluates a batch of example candidates (three tiny tasks, each candidate in several
#      variants so that there are enough distinct evaluations) from three clients at once,
#      while it scrapes the worker's /metrics;
#   5. proves from PostgreSQL, the worker's log and its metrics that the slots ran at the same
#      time on different devices, and prints a short table last.
# The output goes to $OUT/run.log, logs and evidence to $OUT/logs.tar.gz (default OUT
# /tmp/kforge-two-slots). Exit status 0 only when the proof holds.
#
#   bash scripts/gpu_cluster_two_slots.sh
#   DEVICE=cpu EVAL=build-w/gpu_worker/eval/kforge-eval bash scripts/gpu_cluster_two_slots.sh
#
# Environment: OUT, WORK (default /tmp/kforge-cluster), DEVICE (cuda|cpu, default cuda when
# nvidia-smi lists a GPU), EVAL, PYTHON (default python3), VARIANTS (copies of each candidate,
# default 3), PGPORT (default 55999), BUNDLE.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TAG=two-slots
OUT=${OUT:-/tmp/kforge-two-slots}
VARIANTS=${VARIANTS:-3}
# shellcheck source=scripts/gpu_cluster_lib.sh
source scripts/gpu_cluster_lib.sh
# 1.-3. The bundle, the engine, PostgreSQL; then the coordinator and the worker.
gc_setup
gc_start_coordinator
gc_start_worker --coordinator="$COORD" --metrics_sample_s=0.5
WORKER_METRICS=$(port_of worker metrics_port)
KF=("$B/kforge" --coordinator="$COORD" --timeout_s=600)
"${KF[@]}" workers > "$L/workers.txt" 2>&1
"${PSQL[@]}" -d kforge -tA -c "SELECT facts FROM workers" > "$L/worker_facts.json"
say "worker facts: $(cat "$L/worker_facts.json")"

# 4. The batch: distinct variants (a trailing comment changes the content hash) of the example
# candidates that run on the device, from three clients at once, while /metrics is scraped.
declare -A CANDS=([tiny_relu]="correct.py nvrtc_relu.py" [tiny_add_scale]="correct.py nvrtc_add_scale.py"
                  [tiny_linear]="correct.py nvrtc_linear.py")
gc_scrape_metrics "http://127.0.0.1:$WORKER_METRICS/metrics" "$L/metrics.tsv" "$WORK/run/scrape.stop"
say "evaluating: 3 tasks x 2 candidates x $VARIANTS variants = $((3 * 2 * VARIANTS)) evaluations"
t_batch=$(date +%s%N)
CLIENTS=()
for task in "${!CANDS[@]}"; do
  mkdir -p "$WORK/cands/$task"
  files=()
  for c in ${CANDS[$task]}; do
    for v in $(seq "$VARIANTS"); do
      f=$WORK/cands/$task/${c%.*}_v$v.${c##*.}
      { cat "examples/candidates/$task/$c"; echo; echo "# two-slot proof variant $v"; } > "$f"
      files+=("$f")
    done
  done
  "${KF[@]}" eval --task="examples/tasks/tiny/$task.py" --gpu=any "${files[@]}" \
    > "$L/client_$task.log" 2>&1 &
  CLIENTS+=($!)
done
client_rc=0
for pid in "${CLIENTS[@]}"; do wait "$pid" || client_rc=1; done
batch_s=$(( ($(date +%s%N) - t_batch) / 1000000000 ))
sleep 1  # one more scrape after the last result
touch "$WORK/run/scrape.stop"
wait "$SCRAPER"
[[ $client_rc == 0 ]] || say "a client exited non-zero (see logs/client_*.log)"

# 5. The proof.
"${PSQL[@]}" -d kforge -P pager=off -c "
SELECT e.evaluation_id AS id, t.name AS task, e.verdict, e.result->>'device' AS device,
       round((e.result->'stages'->>'total_s')::numeric, 2) AS engine_s,
       to_char(e.finished_at, 'HH24:MI:SS.MS') AS finished,
       e.result->'system'->>'gpu_name' AS gpu
FROM evaluations e JOIN tasks t USING (task_id) ORDER BY e.finished_at" > "$L/evaluations.txt"
# Engine intervals [finished_at - total_s, finished_at] of two evaluations on different devices
# (in CPU mode every slot's device is "cpu") that overlap: the slots ran at the same time.
same_device_ok=false
[[ $DEVICE == cpu ]] && same_device_ok=true
read -r db_pairs db_overlap_s < <("${PSQL[@]}" -d kforge -tA -F ' ' -c "
WITH iv AS (
  SELECT evaluation_id AS id, result->>'device' AS device, finished_at AS f,
         finished_at - make_interval(secs => (result->'stages'->>'total_s')::float8) AS s
  FROM evaluations WHERE state = 'done')
SELECT count(*), coalesce(round(sum(extract(epoch FROM least(a.f, b.f) - greatest(a.s, b.s)))::numeric, 1), 0)
FROM iv a JOIN iv b ON a.id < b.id AND (a.device <> b.device OR $same_device_ok) AND a.s < b.f AND b.s < a.f")
"${PSQL[@]}" -d kforge -tA -F ' ' -c "
SELECT result->>'device', count(*), count(*) FILTER (WHERE verdict = 'ok')
FROM evaluations GROUP BY 1 ORDER BY 1" > "$L/per_device.txt"

"$PY" - "$L" "$DEVICE" <<'PYEOF' > "$L/proof.txt"
import json, sys, collections
out, device = sys.argv[1], sys.argv[2]
# The worker's log: exact start and end of each child, per slot.
events = []
for line in open(f"{out}/worker.log"):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("msg") in ("evaluation started", "evaluation done"):
        events.append((j["ts"], j["msg"] == "evaluation started", j.get("slot"), j.get("device")))
events.sort()
running, max_running, both_s, last_ts, devices_together = {}, 0, 0.0, None, set()
def secs(ts):  # "2026-11-30T03:41:07.123Z" -> seconds of the day
    h, m, s = ts[11:23].split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)
for ts, start, slot, dev in events:
    if last_ts is not None and len(running) >= 2:
        both_s += secs(ts) - secs(last_ts)
    if start:
        running[slot] = dev
    else:
        running.pop(slot, None)
    if len(running) >= 2:
        devices_together |= set(running.values())
    max_running = max(max_running, len(running))
    last_ts = ts
print(f"log_max_concurrent {max_running}")
print(f"log_both_busy_s {both_s:.1f}")
print(f"log_devices_together {','.join(sorted(devices_together))}")
# The metrics: scrapes where both slots were busy, and the GPUs' utilisation then.
scrapes = collections.defaultdict(dict)
for line in open(f"{out}/metrics.tsv"):
    t, series = line.rstrip("\n").split("\t")
    name_labels, value = series.rsplit(" ", 1)
    scrapes[t][name_labels] = float(value)
both, util_both, peak = 0, 0, collections.defaultdict(float)
for t, s in scrapes.items():
    busy = [k for k, v in s.items() if k.startswith("kforge_worker_slot_busy{") and v == 1]
    util = {k: v for k, v in s.items() if k.startswith("kforge_worker_gpu_utilization_ratio{")}
    for k, v in util.items():
        peak[k] = max(peak[k], v)
    if len(busy) >= 2:
        both += 1
        if len(util) >= 2 and all(v > 0 for v in util.values()):
            util_both += 1
print(f"metrics_scrapes {len(scrapes)}")
print(f"metrics_scrapes_both_busy {both}")
print(f"metrics_scrapes_both_gpus_utilised {util_both}")
for k, v in sorted(peak.items()):
    print(f"metrics_peak {k} {v:.2f}")
last = scrapes[max(scrapes)] if scrapes else {}
for k, v in sorted(last.items()):
    if k.startswith(("kforge_worker_slot_busy_seconds_total", "kforge_worker_slot_evaluations_total")):
        print(f"metrics_final {k} {v:g}")
PYEOF
val() { awk -v k="$1" '$1 == k {print $2}' "$L/proof.txt"; }

ok=1
n_devices=$(wc -l < "$L/per_device.txt")
(( n_devices >= 2 )) || [[ $DEVICE == cpu ]] || ok=0
(( db_pairs > 0 )) || ok=0
(( $(val log_max_concurrent) >= 2 )) || ok=0
(( $(val metrics_scrapes_both_busy) > 0 )) || ok=0
if [[ $DEVICE == cuda ]]; then
  [[ $(val log_devices_together) == *cuda:0*cuda:1* ]] || ok=0
  (( $(val metrics_scrapes_both_gpus_utilised) > 0 )) || ok=0
fi

echo
cat "$L/evaluations.txt"
cat "$L/proof.txt"
echo
echo "== two slots, one worker ($DEVICE) =="
echo "machine:            $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs) $(nproc) CPUs"
echo "worker:             $(grep -o '"slots":"[0-9]*"' "$L/worker.log" | head -1), sandbox user $SANDBOX_USER"
echo "batch:              $(( 3 * 2 * VARIANTS )) evaluations in ${batch_s} s from 3 clients"
echo "per device (device, evaluations, ok):"
sed 's/^/                    /' "$L/per_device.txt"
pairs_on="on different devices"
[[ $DEVICE == cpu ]] && pairs_on="(both slots are cpu)"
echo "DB overlap:         $db_pairs pairs of evaluations $pairs_on overlapped, ${db_overlap_s} s in total"
echo "worker log:         max $(val log_max_concurrent) children at once; both slots busy $(val log_both_busy_s) s; together on: $(val log_devices_together)"
echo "metrics:            $(val metrics_scrapes_both_busy)/$(val metrics_scrapes) scrapes with both slots busy; $(val metrics_scrapes_both_gpus_utilised) with both GPUs' utilisation > 0"
grep '^metrics_peak' "$L/proof.txt" | sed 's/^metrics_peak /peak utilisation:   /'
echo "total wall:         $(( $(date +%s) - t_start )) s"
if (( ok )); then echo "PROOF: HOLDS"; exit 0; else echo "PROOF: DOES NOT HOLD"; exit 1; fi
