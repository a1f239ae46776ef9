-- Operator drains (docs/operations.md, "Draining a worker"; issue 15): a worker drained by an
-- operator gets no new leases, on every coordinator replica (the lease statement reads this
-- row), while the leases it holds finish and are stored as usual. Kept apart from `state`,
-- which the worker's own session writes ('draining' on its SIGTERM, 'gone' when its stream
-- ends): an operator's drain outlives the worker's reconnects until an operator undrains it.
ALTER TABLE workers
  ADD COLUMN drained_at timestamptz,  -- NULL: not drained by an operator
  ADD COLUMN drained_by text;         -- the operator's principal
