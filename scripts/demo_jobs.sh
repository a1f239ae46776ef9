# The demo's evaluation and optimization-job sections and its results table, shared by
# scripts/demo.sh and scripts/gpu_cluster_demo.sh. Source it; the functions expect KF, an
# array holding the CLI and its --coordinator flag.
#
#   demo_eval_examples REPO          one batch of tiny_relu candidates, good and bad
#   demo_jobs_select REPO DEVICE KB  sets TASKS (name -> task file), SEED_GLOB, DIALECT
#   demo_jobs_run REPO [FLAGS...]    a job per task of TASKS, submitted at once, then watched
#   demo_results PSQL...             the results table from PostgreSQL

demo_eval_examples() {
  local c=$1/examples/candidates/tiny_relu
  echo
  echo "demo: evaluating example candidates for tiny_relu (one correct, one wrong, one that"
  echo "      raises, one that does not compile, one that crashes)"
  "${KF[@]}" eval --task="$1/examples/tasks/tiny/tiny_relu.py" --gpu=any \
    "$c/correct.py" "$c/wrong.py" "$c/raises.py" "$c/syntax_error.py" "$c/crashes.py" || true
}

# Every example task, seeded with the example candidates that declare tuning knobs. Without a
# GPU (DEVICE cpu) the host-only (kernelbench) seeds are used; with GPUs (cuda) the nvrtc
# kernels, and the KernelBench tasks that have example kernels too when KB holds KernelBench.
demo_jobs_select() {
  local repo=$1 device=$2 kb=$3
  declare -gA TASKS=(
    [tiny_relu]=$repo/examples/tasks/tiny/tiny_relu.py
    [tiny_add_scale]=$repo/examples/tasks/tiny/tiny_add_scale.py
    [tiny_linear]=$repo/examples/tasks/tiny/tiny_linear.py
  )
  if [[ $device == cuda ]]; then
    SEED_GLOB="nvrtc_*.py"; DIALECT=nvrtc
    if [[ -d $kb/level1 ]]; then
      TASKS+=([19_ReLU]=$kb/level1/19_ReLU.py [23_Softmax]=$kb/level1/23_Softmax.py
              [40_LayerNorm]=$kb/level1/40_LayerNorm.py
              [76_Gemm_Add_ReLU]=$kb/level2/76_Gemm_Add_ReLU.py)
    else
      echo "demo: no KernelBench at $kb: the tiny tasks only"
    fi
  else
    SEED_GLOB="torch_*.py"; DIALECT=kernelbench
  fi
}

# Contrastive search, 3 rounds, seed 1, with the offline proposer unless KFORGE_DEMO_LLM names
# a provider; FLAGS go to every `kforge job submit`. All jobs are submitted first (the
# coordinator runs them at once, so the workers never wait for the next job), then each is
# watched in turn: `job watch` replays a job from its start, so the output reads as if each
# had been submitted with --watch.
demo_jobs_run() {
  local repo=$1 name id i
  shift
  local -a llm seeds ids=() names=()
  read -r -a llm <<< "${KFORGE_DEMO_LLM:-}"
  echo
  for name in $(printf '%s\n' "${!TASKS[@]}" | sort); do
    mapfile -t seeds < <(grep -l "kforge: tunable" "$repo/examples/candidates/$name"/$SEED_GLOB 2>/dev/null || true)
    [[ ${#seeds[@]} -gt 0 ]] || continue
    if id=$("${KF[@]}" job submit --task="${TASKS[$name]}" --gpu=any --strategy=contrastive \
              --rounds=3 --seed=1 --dialect="$DIALECT" "${llm[@]}" "$@" "${seeds[@]}"); then
      echo "demo: submitted job $id for $name (contrastive search, 3 rounds, seeds: ${seeds[*]##*/})"
      ids+=("$id")
      names+=("$name")
    else
      echo "demo: the job for $name was not submitted"
    fi
  done
  for i in "${!ids[@]}"; do
    echo
    echo "demo: optimization job for ${names[i]} (${ids[i]})"
    "${KF[@]}" job watch "${ids[i]}" || true
  done
}

# The best correct candidate per job and GPU type; PSQL... connects to the kforge database.
demo_results() {
  echo
  echo "demo: results (per job: the best correct candidate per GPU type, from PostgreSQL)"
  "$@" -P pager=off -c "
SELECT t.name AS task, e.ran_on_gpu_type AS gpu, j.state AS job,
       round((array_agg(e.ref_median_ms ORDER BY e.speedup DESC NULLS LAST))[1]::numeric, 4)
         AS reference_ms,
       round((array_agg(e.cand_median_ms ORDER BY e.speedup DESC NULLS LAST))[1]::numeric, 4)
         AS best_ms,
       round(max(e.speedup)::numeric, 3) AS speedup,
       (array_agg(e.speedup_clock ORDER BY e.speedup DESC NULLS LAST))[1] AS clock,
       round(max(e.speedup_device)::numeric, 3) AS best_device,
       round(max(e.speedup_call)::numeric, 3) AS best_call,
       count(*) AS candidates_evaluated,
       count(*) FILTER (WHERE e.verdict = 'ok') AS correct
FROM jobs j JOIN tasks t USING (task_id) JOIN evaluations e ON e.job_id = j.job_id
WHERE e.state = 'done'
GROUP BY j.job_id, t.name, e.ran_on_gpu_type, j.state, j.created_at
ORDER BY j.created_at, 1, 2;"
}
