-- kforge schema, version 2: dispatch throughput (issue 4, "Benchmark").
--
-- 1. A lane index that serves the Lease order exactly. A worker takes from two lanes (its own
--    GPU type and 'any'); each lane is read in index order and the two short lists are merged,
--    so a lease reads a few index entries instead of scanning and sorting the whole queue.
-- 2. An evaluation remembers its fair position (batch_seq), so a requeued evaluation (expired
--    lease, released lease) goes back where it was instead of to the head of its priority.
-- 3. The transaction that finished an evaluation (done_xid) is the completion cursor of
--    EvaluateBatch: a stream re-reads only what transactions at or after its last snapshot's
--    xmin finished, instead of the whole batch minus a growing list of delivered ids.

DROP INDEX eval_queue_pick_idx;
CREATE INDEX eval_queue_lane_idx
  ON eval_queue (gpu_type, priority DESC, batch_seq, enqueued_at, evaluation_id);

ALTER TABLE evaluations ADD COLUMN batch_seq integer NOT NULL DEFAULT 0;
UPDATE evaluations e SET batch_seq = q.batch_seq FROM eval_queue q
  WHERE q.evaluation_id = e.evaluation_id;

-- Set together with state = 'done' (a result, or worker_lost), to pg_current_xact_id().
ALTER TABLE evaluations ADD COLUMN done_xid xid8;
-- Rows finished before this migration share the cursor's lowest position.
UPDATE evaluations SET done_xid = '0'::xid8 WHERE state = 'done';
CREATE INDEX evaluations_batch_done_idx ON evaluations (batch_id, done_xid)
  WHERE done_xid IS NOT NULL;
