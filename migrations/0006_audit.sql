-- Who did what and when (docs/security.md, "Audit"): submissions, cancellations, worker
-- registrations and cut-offs, token changes. Append-only: a trigger refuses every UPDATE,
-- DELETE and TRUNCATE (a database superuser could still drop it; the coordinator never does).
CREATE TABLE audit_log (
  audit_id   bigserial PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT now(),
  principal  text NOT NULL,
  tenant     text NOT NULL,
  action     text NOT NULL,   -- submit_task, submit_job, submit_batch, cancel_job,
                              -- register_worker, cut_off_worker, create_token, revoke_token
  target     text NOT NULL,   -- the id acted on
  detail     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at_idx ON audit_log (at DESC, audit_id DESC);
CREATE INDEX audit_log_principal_idx ON audit_log (principal, at DESC);

CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only';
END
$$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
