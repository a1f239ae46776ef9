-- Optimization jobs: a journal of each round's steps, so a restarted coordinator replays a
-- round without calling the LLM or queueing evaluations twice, and so every completion (parsed
-- or not) can be exported as an RL rollout.

ALTER TABLE jobs ADD COLUMN started_at timestamptz;

-- One step of one round: an LLM call (kind 'generate' or 'ideas') or a queued evaluation batch
-- (kind 'evaluate'). `payload` holds what the step returned: the completions with their
-- prompts, analyses, parse errors and candidate ids; the ideas; or the batch id.
ALTER TABLE job_candidates ADD COLUMN idea text;  -- idea branching: the idea it implements

CREATE TABLE job_steps (
  job_id      uuid NOT NULL REFERENCES jobs ON DELETE CASCADE,
  round       integer NOT NULL,
  step        integer NOT NULL,
  kind        text NOT NULL CHECK (kind IN ('generate', 'ideas', 'evaluate')),
  payload     jsonb NOT NULL,
  tokens      bigint NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job_id, round, step)
);
