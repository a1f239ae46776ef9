-- Per-tenant database roles for researchers (issue 15; docs/security.md, "Tenants";
-- docs/operations.md, "Researcher database access"). A research role is a LOGIN role mapped
-- to one tenant in research_roles; it reads the researcher views and sees, through row-level
-- security on the tables under them, its tenant's rows and the public space's ('public'),
-- never another tenant's and never rows no tenant owns. Admins create one with
-- kforge_create_research_role(tenant) and drop it with kforge_drop_research_role(role).
--
-- Roles not in research_roles are not filtered: the coordinator's role (the tables' owner, or
-- a superuser) reads everything as before. Only research roles are granted anything by these
-- functions, so the filter is what stands between a research role and other tenants' rows.

CREATE TABLE research_roles (
  role_name   name PRIMARY KEY,
  tenant      text NOT NULL CHECK (tenant <> ''),
  created_by  name NOT NULL DEFAULT current_user,
  created_at  timestamptz NOT NULL DEFAULT now()
);
-- Every role may see its own mapping row (the policies below look it up), nothing else.
ALTER TABLE research_roles ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_mapping ON research_roles FOR SELECT USING (role_name = current_user);
GRANT SELECT ON research_roles TO PUBLIC;

-- The tables the views read. A research role reads a row of evaluations when its tenant is
-- the role's or 'public'; a task or a job's candidate row when such an evaluation uses it.
ALTER TABLE evaluations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON evaluations FOR SELECT USING (
  NOT EXISTS (SELECT 1 FROM research_roles r WHERE r.role_name = current_user)
  OR tenant = 'public'
  OR tenant = (SELECT r.tenant FROM research_roles r WHERE r.role_name = current_user));

ALTER TABLE tasks ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON tasks FOR SELECT USING (
  NOT EXISTS (SELECT 1 FROM research_roles r WHERE r.role_name = current_user)
  OR EXISTS (SELECT 1 FROM evaluations e WHERE e.task_id = tasks.task_id));

ALTER TABLE job_candidates ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON job_candidates FOR SELECT USING (
  NOT EXISTS (SELECT 1 FROM research_roles r WHERE r.role_name = current_user)
  OR EXISTS (SELECT 1 FROM evaluations e WHERE e.job_id = job_candidates.job_id));

-- Row-level security binds the table's owner only when forced; it is not, so the
-- coordinator's writes (as owner) are unchanged. The policies above are FOR SELECT: other
-- commands by a role that is neither owner nor superuser find no row, and research roles are
-- granted none.

-- The views run with the privileges of the role that reads them, so the policies apply.
ALTER VIEW best_per_task_gpu SET (security_invoker = true);
ALTER VIEW leaderboard SET (security_invoker = true);
ALTER VIEW job_trajectory SET (security_invoker = true);
ALTER VIEW best_per_task_gpu_clock SET (security_invoker = true);
ALTER VIEW leaderboard_by_clock SET (security_invoker = true);

-- Creates a LOGIN role for `tenant`'s researchers and returns its name and a generated
-- password (shown once; PostgreSQL keeps its SCRAM verifier). Run by a role with CREATEROLE
-- that may grant on these objects (the tables' owner or a superuser).
CREATE FUNCTION kforge_create_research_role(tenant text, OUT role_name name, OUT password text)
LANGUAGE plpgsql AS $$
BEGIN
  IF tenant IS NULL OR tenant = '' THEN
    RAISE EXCEPTION 'a research role needs a tenant';
  END IF;
  role_name := left('kforge_research_' ||
                    regexp_replace(lower(tenant), '[^a-z0-9_]', '_', 'g'), 50) || '_' ||
               left(replace(gen_random_uuid()::text, '-', ''), 8);
  password := replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');
  EXECUTE format('CREATE ROLE %I LOGIN PASSWORD %L', role_name, password);
  INSERT INTO research_roles (role_name, tenant) VALUES (role_name, tenant);
  EXECUTE format('GRANT SELECT ON best_per_task_gpu, leaderboard, job_trajectory, '
                 'best_per_task_gpu_clock, leaderboard_by_clock, evaluations TO %I', role_name);
  EXECUTE format('GRANT SELECT (task_id, name) ON tasks TO %I', role_name);
  EXECUTE format('GRANT SELECT (job_id, candidate_id, round) ON job_candidates TO %I',
                 role_name);
END $$;

-- Drops a role made by kforge_create_research_role, with its grants and mapping.
CREATE FUNCTION kforge_drop_research_role(role text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM research_roles r WHERE r.role_name = role) THEN
    RAISE EXCEPTION '% is not a research role', role;
  END IF;
  EXECUTE format('REVOKE ALL ON best_per_task_gpu, leaderboard, job_trajectory, '
                 'best_per_task_gpu_clock, leaderboard_by_clock, evaluations, tasks, '
                 'job_candidates FROM %I', role);
  EXECUTE format('DROP ROLE %I', role);
  DELETE FROM research_roles r WHERE r.role_name = role;
END $$;

REVOKE EXECUTE ON FUNCTION kforge_create_research_role(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION kforge_drop_research_role(text) FROM PUBLIC;
