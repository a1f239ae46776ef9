#!/usr/bin/env bash
# Issue 14 point 4 through the worker: the shared corpus's candidates (CUDA-L1's, all verdicts)
# evaluated by one kforge-worker with GPU turns (--lanes_per_gpu=$LANES evaluations per GPU,
# docs/evaluation.md "GPU turns") and building ahead (--prefetch=$PREFETCH), submitted with
# `kforge eval` from one client per task, all at once. On a machine with the bundle of
# scripts/gpu_cluster_bundle.sh it:
#   1. unpacks the bundle, builds kforge-eval unless $EVAL names one, starts PostgreSQL, the
#      coordinator and the worker (scripts/gpu_cluster_lib.sh), and scrapes its /metrics;
#   2. writes each selected corpus row's task (its reference, named as the row: 1_12.py) and
#      $VARIANTS copies of its candidate (a trailing comment changes the content hash: the
#      copies are distinct evaluations of one task, as a search's batch is), and evaluates them;
#   3. reads every result back from PostgreSQL into $OUT/evaluations.jsonl and prints: the
#      verdicts, evaluations per hour of the batch's wall time (the GPU is this worker's alone)
#      and per hour of the GPU turns held (stages.gpu_turn_s; the turn is the GPU's time an
#      evaluation had to itself), the `ok` wall time (total_s less gpu_wait_s), the capped
#      share, and the GPU utilisation NVML reported during the batch (the worker's gauge).
# Selection: levels $LEVELS (default 1,2), candidates that build no extension unless
# BUILDS=any, at most $LIMIT (default all), ONLY a comma-separated list of names (1_12,...).
#
#   bash scripts/gpu_cluster_corpus.sh
#   DEVICE=cpu EVAL=build/gpu_worker/eval/kforge-eval LIMIT=4 bash scripts/gpu_cluster_corpus.sh
#
# (In CPU mode every slot's device is "cpu", so with LANES above 1 all of them share one lock:
# one evaluation at a time, which checks the script, not a throughput.)
#
# Environment: OUT (default /tmp/kforge-corpus), WORK, DEVICE, EVAL, PYTHON, PGPORT, BUNDLE as
# in scripts/gpu_cluster_lib.sh; CORPUS (default .gpu-carry/corpora/cudal1_a100.jsonl), LANES
# (default 2), PREFETCH (default 2), VARIANTS (default 2), LEVELS, BUILDS, LIMIT, ONLY,
# BATCH_TIMEOUT_S (default 900). Exit status 0 when every submitted evaluation has a result.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TAG=corpus
OUT=${OUT:-/tmp/kforge-corpus}
CORPUS=${CORPUS:-.gpu-carry/corpora/cudal1_a100.jsonl}
LANES=${LANES:-2}
PREFETCH=${PREFETCH:-2}
VARIANTS=${VARIANTS:-2}
# shellcheck source=scripts/gpu_cluster_lib.sh
source scripts/gpu_cluster_lib.sh
[[ -f $CORPUS ]] || { echo "$TAG: no corpus at $CORPUS (scripts/gpu_carry.sh)"; exit 1; }
gc_setup
gc_start_coordinator
gc_start_worker --coordinator="$COORD" --metrics_sample_s=0.5 --lanes_per_gpu="$LANES" \
  --prefetch="$PREFETCH"
WORKER_METRICS=$(port_of worker metrics_port)
KF=("$B/kforge" --coordinator="$COORD" --timeout_s="${BATCH_TIMEOUT_S:-900}")

# 2. The candidates, one directory per corpus row: task.py and cand_v<k>.py.
"$PY" - "$CORPUS" "$WORK/cands" "$VARIANTS" "${LEVELS:-1,2}" "${BUILDS:-no}" "${LIMIT:-0}" \
  "${ONLY:-}" > "$L/selected.txt" <<'PYEOF' || die "the corpus could not be read"
import json, os, sys
corpus, dest, variants, levels, builds, limit, only = sys.argv[1:8]
levels = {int(x) for x in levels.split(",")}
only = set(filter(None, only.split(",")))
n = 0
for line in open(corpus):
    r = json.loads(line)
    name = f"{r['level_id']}_{r['task_id']}"
    extension = "cpp_extension" in r["custom_code"]
    if r["level_id"] not in levels or (only and name not in only) or \
            (builds == "no" and extension):
        continue
    if int(limit) and n >= int(limit):
        break
    os.makedirs(f"{dest}/{name}", exist_ok=True)
    with open(f"{dest}/{name}/{name}.py", "w") as f:
        f.write(r["ref_code"])
    for k in range(1, int(variants) + 1):
        with open(f"{dest}/{name}/cand_v{k}.py", "w") as f:
            f.write(r["custom_code"] + f"\n# corpus variant {k}\n")
    print(name)
    n += 1
PYEOF
mapfile -t NAMES < "$L/selected.txt"
TOTAL=$(( ${#NAMES[@]} * VARIANTS ))
say "evaluating ${#NAMES[@]} corpus candidates x $VARIANTS variants = $TOTAL evaluations" \
  "(lanes per GPU $LANES, prefetch $PREFETCH)"
gc_scrape_metrics "http://127.0.0.1:$WORKER_METRICS/metrics" "$L/metrics.tsv" "$WORK/run/scrape.stop"
t_batch=$(date +%s.%N)
CLIENTS=()
for name in "${NAMES[@]}"; do
  "${KF[@]}" eval --task="$WORK/cands/$name/$name.py" --gpu=any "$WORK/cands/$name"/cand_v*.py \
    > "$L/client_$name.log" 2>&1 &
  CLIENTS+=($!)
done
client_rc=0
for pid in "${CLIENTS[@]}"; do wait "$pid" || client_rc=1; done
t_end=$(date +%s.%N)
sleep 1  # one more scrape after the last result
touch "$WORK/run/scrape.stop"
wait "$SCRAPER"
[[ $client_rc == 0 ]] || say "a client exited non-zero (logs/client_*.log)"

# 3. The results, from the database.
"${PSQL[@]}" -d kforge -tA -c "
SELECT json_build_object('task', t.name, 'verdict', e.verdict, 'rule', e.rule,
                         'finished_at', extract(epoch FROM e.finished_at), 'result', e.result)
FROM evaluations e JOIN tasks t USING (task_id) WHERE e.state = 'done'
ORDER BY e.finished_at" > "$OUT/evaluations.jsonl"
"$PY" - "$OUT/evaluations.jsonl" "$L/metrics.tsv" "$t_batch" "$t_end" "$TOTAL" "$LANES" \
  <<'PYEOF' | tee "$OUT/corpus_table.txt"
import collections, json, statistics, sys
rows_path, metrics_path, t0, t1, total, lanes = sys.argv[1:7]
t0, t1, total = float(t0), float(t1), int(total)
rows = [json.loads(l) for l in open(rows_path) if l.strip()]
wall = t1 - t0
stages = [r["result"].get("stages", {}) if r["result"] else {} for r in rows]
turns = sum(s.get("gpu_turn_s", 0) for s in stages)
verdicts = collections.Counter(r["verdict"] for r in rows)
print(f"== the corpus through one worker: lanes per GPU {lanes}, {len(rows)} of {total} "
      f"evaluations have a result ==")
print("verdicts: " + ", ".join(f"{v} {n}" for v, n in verdicts.most_common()))
print(f"batch wall {wall:.1f} s: {len(rows) / wall * 3600:.0f} evaluations per hour of it "
      "(one GPU, the worker's alone)")
if turns:
    print(f"GPU turns held {turns:.1f} s: {len(rows) / turns * 3600:.0f} evaluations per "
          "hour of turns (those decided by the build ahead count 0 s)")
by_verdict = collections.defaultdict(list)
for r, s in zip(rows, stages):
    by_verdict[r["verdict"]].append(s.get("gpu_turn_s", 0))
for v, t in sorted(by_verdict.items(), key=lambda kv: -sum(kv[1])):
    print(f"  {v}: {len(t)} evaluations, turns {sum(t):.1f} s (median {statistics.median(t):.2f} s)")
in_build = sum(s.get("build_s", 0) for s in stages if s.get("gpu_turn_s", 0) > 0)
print(f"of the turns' time, in the build stage (the candidate's module and its compiles, which "
      f"run after the turn is taken): {in_build:.1f} s")
held = [s for s in stages if s.get("gpu_turn_s", 0) > 0]
release = [s.get("gpu_release_s", 0) for s in held]
if any(release):  # since session 26
    print(f"of the turns' time, after the evaluation ended (its processes killed, their CUDA "
          f"contexts torn down, until the release): {sum(release):.1f} s (median "
          f"{statistics.median(release):.3f} s per turn)")
def turn_sum(key):
    return sum(s.get(key, 0) for s in held)
if turns:
    print(f"of the turns' time, in the correctness trials {turn_sum('correctness_s'):.1f} s "
          f"(the reference's calls {turn_sum('correctness_reference_s'):.1f} s, the first trial's "
          f"{turn_sum('correctness_first_reference_s'):.1f} s; the candidate's "
          f"{turn_sum('correctness_candidate_s'):.1f} s, the first trial's "
          f"{turn_sum('correctness_first_candidate_s'):.1f} s), in the timing "
          f"{turn_sum('timing_s'):.1f} s (the device clock's phase "
          f"{turn_sum('timing_device_s'):.1f} s, the judge's CUPTI flushes in it "
          f"{turn_sum('timing_trace_s'):.1f} s)")
ok = [(r, s) for r, s in zip(rows, stages) if r["verdict"] == "ok"]
if ok:
    w = sorted(s.get("total_s", 0) - s.get("gpu_wait_s", 0) for _, s in ok)
    print(f"ok evaluation wall (total_s less gpu_wait_s): median {statistics.median(w):.2f} s, "
          f"p90 {w[int(0.9 * (len(w) - 1))]:.2f} s over {len(w)}")
    capped = sum(1 for r, _ in ok if any((r["result"].get(k) or {}).get("capped")
                                          for k in ("reference", "candidate")))
    print(f"ok evaluations capped: {capped}/{len(ok)}")
util = collections.defaultdict(list)
for line in open(metrics_path):
    t, series = line.split("\t", 1)
    if series.startswith("kforge_worker_gpu_utilization_ratio{") and t0 <= float(t) <= t1:
        util[series.split("}")[0]].append(float(series.split()[-1]))
for series, v in sorted(util.items()):
    print(f"GPU utilisation by NVML during the batch: mean {statistics.mean(v):.1%} over "
          f"{len(v)} readings ({series}}})")
PYEOF
[[ $(wc -l < "$OUT/evaluations.jsonl") -ge $TOTAL ]] || die "results missing"
say "done"
