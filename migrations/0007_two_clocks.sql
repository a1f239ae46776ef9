-- Two clocks in every result (docs/evaluation.md, "Two clocks"; issue 14): the device clock
-- (the GPU span of the forward's work on every stream) and the call clock (the forward as its
-- caller sees it, host dispatch included). `speedup` stays the speedup of the clock the
-- task asked for (TaskOptions.speedup_clock), now named by `speedup_clock`; both clocks'
-- speedups and medians are kept beside it. Rows finished before this migration read NULL
-- in every new column: their results predate the two clocks.
ALTER TABLE evaluations
  ADD COLUMN speedup_device      double precision,  -- with 'ok', where the device clock was trusted
  ADD COLUMN speedup_call        double precision,  -- with 'ok'
  ADD COLUMN speedup_clock       text CHECK (speedup_clock IN ('device', 'call')),
  ADD COLUMN reference_device_ms double precision,  -- medians, where the program was timed
  ADD COLUMN candidate_device_ms double precision,  -- on that clock
  ADD COLUMN reference_call_ms   double precision,
  ADD COLUMN candidate_call_ms   double precision,
  ADD COLUMN speedup_ci_low      double precision,  -- 95% interval of `speedup`, when given
  ADD COLUMN speedup_ci_high     double precision,
  ADD COLUMN native_code         boolean,  -- the candidate process reached native code
  ADD COLUMN timing_capped       boolean;  -- the sampling behind `speedup` ended at a cap

-- The views keep their columns and their meaning (`speedup` as stored) and gain the clock
-- columns at the end, so what read them before reads the same.
CREATE OR REPLACE VIEW best_per_task_gpu AS
SELECT DISTINCT ON (e.task_id, e.ran_on_gpu_type)
  e.task_id, t.name AS task_name, e.ran_on_gpu_type AS gpu_type, e.candidate_id,
  e.speedup, e.ref_median_ms, e.cand_median_ms, e.evaluation_id, e.finished_at,
  e.speedup_clock, e.speedup_device, e.speedup_call, e.speedup_ci_low, e.speedup_ci_high,
  e.native_code, e.timing_capped
FROM evaluations e JOIN tasks t USING (task_id)
WHERE e.verdict = 'ok'
ORDER BY e.task_id, e.ran_on_gpu_type, e.speedup DESC, e.evaluation_id;

CREATE OR REPLACE VIEW job_trajectory AS
SELECT e.job_id, e.ran_on_gpu_type AS gpu_type, e.evaluation_id, e.finished_at,
       jc.round, e.verdict, e.speedup,
       max(e.speedup) OVER (PARTITION BY e.job_id, e.ran_on_gpu_type
                            ORDER BY e.finished_at, e.evaluation_id) AS best_so_far,
       e.speedup_clock, e.speedup_device, e.speedup_call
FROM evaluations e
LEFT JOIN job_candidates jc ON jc.job_id = e.job_id AND jc.candidate_id = e.candidate_id
WHERE e.job_id IS NOT NULL AND e.state = 'done';

-- The best correct candidate per task, GPU type and clock, ranked by that clock's speedup
-- whichever clock made `speedup`: device-clock and call-clock results compared only with
-- their own kind.
CREATE VIEW best_per_task_gpu_clock AS
SELECT DISTINCT ON (e.task_id, e.ran_on_gpu_type, c.clock)
  e.task_id, t.name AS task_name, e.ran_on_gpu_type AS gpu_type, c.clock, e.candidate_id,
  c.speedup, c.reference_ms, c.candidate_ms, e.native_code, e.timing_capped,
  e.evaluation_id, e.finished_at
FROM evaluations e JOIN tasks t USING (task_id)
CROSS JOIN LATERAL (VALUES
  ('device', e.speedup_device, e.reference_device_ms, e.candidate_device_ms),
  ('call', e.speedup_call, e.reference_call_ms, e.candidate_call_ms))
  AS c (clock, speedup, reference_ms, candidate_ms)
WHERE e.verdict = 'ok' AND c.speedup IS NOT NULL
ORDER BY e.task_id, e.ran_on_gpu_type, c.clock, c.speedup DESC, e.evaluation_id;

-- The leaderboard per GPU type and clock (the leaderboard view's columns, per clock).
CREATE VIEW leaderboard_by_clock AS
SELECT gpu_type, clock,
       count(*) AS tasks_solved,
       avg(speedup) AS mean_speedup,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY speedup) AS median_speedup,
       avg(CASE WHEN speedup > 1 THEN 1.0 ELSE 0.0 END) AS fast_1
FROM best_per_task_gpu_clock
GROUP BY gpu_type, clock;
