-- The dialect a candidate is judged under belongs to the submission, not to the source
-- (red team, session 29; docs/security.md, "Tenants"). Candidates are content-addressed and
-- shared by every tenant, and candidates.dialect was written by whoever submitted a source
-- first: tenant B's kernelbench copy of a source tenant A had submitted as cpp was leased as
-- cpp. Each evaluation and each job's candidate now carries the dialect it was submitted
-- with; leases and job populations read it from there.
--
-- Rows from before this migration keep NULL, which reads as the candidate's dialect (what
-- they were judged under); candidates.dialect is kept for them only.

ALTER TABLE evaluations ADD COLUMN dialect text
  CHECK (dialect IN ('kernelbench', 'nvrtc', 'cpp'));
ALTER TABLE job_candidates ADD COLUMN dialect text
  CHECK (dialect IN ('kernelbench', 'nvrtc', 'cpp'));
