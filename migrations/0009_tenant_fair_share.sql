-- Fair share between tenants (issue 15; docs/architecture.md, "Queue with leases"). A lease
-- goes to the tenant with the fewest evaluations in flight on the asking worker's GPU type,
-- the least recently served of those on a tie, then within that tenant in today's order
-- (priority, position within the batch, age). The lease statement reads a tenant's queued
-- rows and counts its leases without joining batches, so the tenant is copied onto the queue
-- rows and the leases; evaluations carry it too (the researchers' row-level security of
-- migration 0010 filters on it).
--
-- The tenant is the submitting principal's ('public' is a tenant like any other); work from
-- before migration 0005, which no tenant owns, shares one group: '' in the queue and leases,
-- NULL in evaluations (as in batches).

ALTER TABLE evaluations ADD COLUMN tenant text;
UPDATE evaluations e SET tenant = b.tenant FROM batches b
  WHERE b.batch_id = e.batch_id AND b.tenant IS NOT NULL;

ALTER TABLE eval_queue ADD COLUMN tenant text NOT NULL DEFAULT '';
UPDATE eval_queue q SET tenant = e.tenant FROM evaluations e
  WHERE e.evaluation_id = q.evaluation_id AND e.tenant IS NOT NULL;

ALTER TABLE leases ADD COLUMN tenant text NOT NULL DEFAULT '';
UPDATE leases l SET tenant = e.tenant FROM evaluations e
  WHERE e.evaluation_id = l.evaluation_id AND e.tenant IS NOT NULL;

-- A lane (GPU type) is now read per tenant: the tenants with queued work are found by
-- skipping through this index, and each one's rows are read in its order.
DROP INDEX eval_queue_lane_idx;
CREATE INDEX eval_queue_tenant_lane_idx
  ON eval_queue (gpu_type, tenant, priority DESC, batch_seq, enqueued_at, evaluation_id);

-- When each tenant last got a lease on each GPU type: the tie-break between tenants with as
-- much in flight (a one-slot pool always has none in flight when it asks). A lease statement
-- updates only rows it can lock at once (SKIP LOCKED): a row locked by a concurrent lease is
-- being set to the same moment.
CREATE TABLE tenant_shares (
  gpu_type        text NOT NULL,
  tenant          text NOT NULL,
  last_leased_at  timestamptz NOT NULL,
  PRIMARY KEY (gpu_type, tenant)
);
