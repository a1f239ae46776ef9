-- kforge schema, version 1.
-- Content-addressed tasks and candidates, optimization jobs, the evaluation queue with
-- leases, evaluations with their full measurements, workers, and LLM call accounting.

CREATE TABLE tasks (
  task_id     text PRIMARY KEY,                 -- sha256 of source
  name        text NOT NULL,
  source      text NOT NULL,
  options     jsonb NOT NULL DEFAULT '{}',      -- precision, tolerances, trials
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tasks_name_idx ON tasks (name);

CREATE TABLE jobs (
  job_id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  task_id              text NOT NULL REFERENCES tasks,
  state                text NOT NULL DEFAULT 'queued'
                       CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  gpu_types            text[] NOT NULL,
  strategy             text NOT NULL,
  params               jsonb NOT NULL DEFAULT '{}',  -- strategy params, LLM settings, budget, seed
  search_state         jsonb,                        -- the strategy's resumable state
  rounds_done          integer NOT NULL DEFAULT 0,
  candidates_evaluated integer NOT NULL DEFAULT 0,
  tokens_used          bigint NOT NULL DEFAULT 0,
  error                text,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  finished_at          timestamptz
);
CREATE INDEX jobs_task_idx ON jobs (task_id, created_at DESC);
CREATE INDEX jobs_active_idx ON jobs (state) WHERE state IN ('queued', 'running');

CREATE TABLE candidates (
  candidate_id text PRIMARY KEY,                -- sha256 of source
  source       text NOT NULL,
  dialect      text NOT NULL CHECK (dialect IN ('kernelbench', 'nvrtc', 'cpp')),
  created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE llm_calls (
  call_id      bigserial PRIMARY KEY,
  job_id       uuid REFERENCES jobs,
  provider     text NOT NULL,
  model        text NOT NULL,
  tokens_in    bigint NOT NULL DEFAULT 0,
  tokens_out   bigint NOT NULL DEFAULT 0,
  latency_ms   double precision NOT NULL DEFAULT 0,
  cost_usd     numeric(12, 6) NOT NULL DEFAULT 0,
  status       text NOT NULL,                   -- ok, http_429, http_5xx, timeout, parse_error...
  error        text,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX llm_calls_job_idx ON llm_calls (job_id, created_at);

-- Where a candidate came from within a job (one candidate may appear in several jobs).
CREATE TABLE job_candidates (
  job_id        uuid NOT NULL REFERENCES jobs,
  candidate_id  text NOT NULL REFERENCES candidates,
  round         integer NOT NULL,
  parent_ids    text[] NOT NULL DEFAULT '{}',
  prompt        text,
  analysis      text,
  completion    text,
  llm_call_id   bigint REFERENCES llm_calls,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, candidate_id)
);
CREATE INDEX job_candidates_candidate_idx ON job_candidates (candidate_id);

CREATE TABLE workers (
  worker_id       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  hostname        text NOT NULL,
  gpu_type        text NOT NULL,
  facts           jsonb NOT NULL,
  slots           integer NOT NULL CHECK (slots > 0),
  state           text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'draining', 'gone')),
  registered_at   timestamptz NOT NULL DEFAULT now(),
  last_heartbeat  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workers_type_idx ON workers (gpu_type, state);

-- A client's batch of evaluations (EvaluateBatch); jobs create batches too.
CREATE TABLE batches (
  batch_id    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  task_id     text NOT NULL REFERENCES tasks,
  job_id      uuid REFERENCES jobs,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- One candidate on one GPU type with one set of settings. Queue state and result in one row,
-- so a result is stored exactly once (the row moves to 'done' once).
CREATE TABLE evaluations (
  evaluation_id   bigserial PRIMARY KEY,
  candidate_id    text NOT NULL REFERENCES candidates,
  task_id         text NOT NULL REFERENCES tasks,
  batch_id        uuid REFERENCES batches,
  job_id          uuid REFERENCES jobs,
  client_ref      text,
  gpu_type        text NOT NULL,                -- requested type, or 'any'
  settings        jsonb NOT NULL DEFAULT '{}',  -- engine settings (trials, tolerances, limits)
  state           text NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'leased', 'done')),
  priority        integer NOT NULL DEFAULT 0,
  attempts        integer NOT NULL DEFAULT 0,
  max_attempts    integer NOT NULL DEFAULT 3,
  enqueued_at     timestamptz NOT NULL DEFAULT now(),
  -- the result, set once when state becomes 'done'
  verdict         text CHECK (verdict IN ('ok', 'compile_error', 'runtime_error', 'incorrect',
                                          'timeout', 'rejected')),
  reason          text,
  rule            text,                          -- anti-hacking rule for 'rejected'
  speedup         double precision,
  ref_median_ms   double precision,
  cand_median_ms  double precision,
  result          jsonb,                         -- the whole EvalResult
  system_info     jsonb,
  compiler_log    text,
  worker_id       uuid REFERENCES workers,
  ran_on_gpu_type text,                          -- the worker's type (differs when 'any')
  finished_at     timestamptz,
  UNIQUE (batch_id, candidate_id, gpu_type)
);
CREATE INDEX evaluations_best_idx ON evaluations (task_id, ran_on_gpu_type, speedup DESC)
  WHERE verdict = 'ok';
CREATE INDEX evaluations_batch_idx ON evaluations (batch_id, evaluation_id);
CREATE INDEX evaluations_job_idx ON evaluations (job_id, finished_at);
CREATE INDEX evaluations_candidate_idx ON evaluations (candidate_id);

-- The queue: evaluations waiting for a worker. Dequeued with FOR UPDATE SKIP LOCKED.
-- batch_seq is the item's position within its batch: ordering by it interleaves batches, so a
-- large batch cannot starve one submitted after it.
CREATE TABLE eval_queue (
  evaluation_id  bigint PRIMARY KEY REFERENCES evaluations ON DELETE CASCADE,
  gpu_type       text NOT NULL,
  priority       integer NOT NULL DEFAULT 0,
  batch_seq      integer NOT NULL DEFAULT 0,
  enqueued_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX eval_queue_pick_idx ON eval_queue (gpu_type, priority DESC, batch_seq, enqueued_at);

-- Evaluations held by a worker. A lease past its deadline goes back to the queue.
CREATE TABLE leases (
  lease_id       uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  evaluation_id  bigint NOT NULL UNIQUE REFERENCES evaluations ON DELETE CASCADE,
  worker_id      uuid NOT NULL REFERENCES workers,
  attempt        integer NOT NULL,
  granted_at     timestamptz NOT NULL DEFAULT now(),
  deadline       timestamptz NOT NULL
);
CREATE INDEX leases_deadline_idx ON leases (deadline);
CREATE INDEX leases_worker_idx ON leases (worker_id);

-- Views for researchers.

-- The best correct candidate per task and GPU type.
CREATE VIEW best_per_task_gpu AS
SELECT DISTINCT ON (e.task_id, e.ran_on_gpu_type)
  e.task_id, t.name AS task_name, e.ran_on_gpu_type AS gpu_type, e.candidate_id,
  e.speedup, e.ref_median_ms, e.cand_median_ms, e.evaluation_id, e.finished_at
FROM evaluations e JOIN tasks t USING (task_id)
WHERE e.verdict = 'ok'
ORDER BY e.task_id, e.ran_on_gpu_type, e.speedup DESC, e.evaluation_id;

-- Per GPU type: tasks with a correct candidate, mean and median best speedup, fast_1 share.
CREATE VIEW leaderboard AS
SELECT gpu_type,
       count(*) AS tasks_solved,
       avg(speedup) AS mean_speedup,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY speedup) AS median_speedup,
       avg(CASE WHEN speedup > 1 THEN 1.0 ELSE 0.0 END) AS fast_1
FROM best_per_task_gpu
GROUP BY gpu_type;

-- Each job's best speedup per GPU type after each evaluation (for trajectory plots).
CREATE VIEW job_trajectory AS
SELECT e.job_id, e.ran_on_gpu_type AS gpu_type, e.evaluation_id, e.finished_at,
       jc.round, e.verdict, e.speedup,
       max(e.speedup) OVER (PARTITION BY e.job_id, e.ran_on_gpu_type
                            ORDER BY e.finished_at, e.evaluation_id) AS best_so_far
FROM evaluations e
LEFT JOIN job_candidates jc ON jc.job_id = e.job_id AND jc.candidate_id = e.candidate_id
WHERE e.job_id IS NOT NULL AND e.state = 'done';
