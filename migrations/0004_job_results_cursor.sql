-- WatchJob reads a job's new results by the finishing transaction (done_xid), as
-- EvaluateBatch reads a batch's: an index keyed like evaluations_batch_done_idx.
CREATE INDEX evaluations_job_done_idx ON evaluations (job_id, done_xid)
  WHERE done_xid IS NOT NULL AND job_id IS NOT NULL;
