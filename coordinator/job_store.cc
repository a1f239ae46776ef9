#include "coordinator/job_store.h"

#include "common/base/sha256.h"
#include "common/status_macros.h"
#include "coordinator/task_validation.h"

namespace kforge {
namespace {

constexpr char kJobColumns[] =
    "SELECT job_id, task_id, state, array_to_json(gpu_types)::text AS gpu_types, strategy, "
    "  params::text AS params, coalesce(search_state::text, 'null') AS search_state, "
    "  rounds_done, candidates_evaluated, tokens_used, coalesce(error, '') AS error, "
    "  coalesce(owner, '') AS owner, coalesce(tenant, '') AS tenant, "
    "  " KFORGE_PG_RFC3339("created_at") " AS created, "
    "  " KFORGE_PG_RFC3339("updated_at") " AS updated FROM jobs ";

nlohmann::json ParseJson(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json() : j;
}

std::vector<JobRow> ParseJobs(const PgResult& r) {
  std::vector<JobRow> out;
  for (int i = 0; i < r.rows(); ++i) {
    JobRow j;
    j.job_id = r.Get(i, "job_id");
    j.task_id = r.Get(i, "task_id");
    j.state = r.Get(i, "state");
    for (const auto& g : ParseJson(r.Get(i, "gpu_types"))) j.gpu_types.push_back(g);
    j.strategy = r.Get(i, "strategy");
    j.params = ParseJson(r.Get(i, "params"));
    j.search_state = ParseJson(r.Get(i, "search_state"));
    j.rounds_done = static_cast<int>(r.GetInt(i, "rounds_done"));
    j.candidates_evaluated = static_cast<int>(r.GetInt(i, "candidates_evaluated"));
    j.tokens_used = r.GetInt(i, "tokens_used");
    j.error = r.Get(i, "error");
    j.owner = r.Get(i, "owner");
    j.tenant = r.Get(i, "tenant");
    j.created_at = r.Get(i, "created");
    j.updated_at = r.Get(i, "updated");
    out.push_back(std::move(j));
  }
  return out;
}

// A job id that PostgreSQL would reject as a uuid is simply unknown.
absl::Status UnknownJob(const std::string& job_id) {
  return absl::NotFoundError("no job " + job_id);
}

}  // namespace

absl::StatusOr<std::string> JobStore::CreateJob(const std::string& task_id,
                                                const std::vector<std::string>& gpu_types,
                                                const std::string& strategy,
                                                const nlohmann::json& params,
                                                const std::vector<SeedCandidate>& seeds,
                                                const std::string& owner,
                                                const std::string& tenant) {
  ASSIGN_OR_RETURN(PgResult task, pool_.Exec("SELECT 1 FROM tasks WHERE task_id = $1", {task_id}));
  if (task.rows() == 0) return absl::NotFoundError("no task " + task_id + "; submit it first");
  nlohmann::json seed_rows = nlohmann::json::array();
  for (const SeedCandidate& s : seeds) {
    seed_rows.push_back(
        {{"id", Sha256Hex(s.source)}, {"source", s.source}, {"dialect", s.dialect}});
  }
  // One statement, so the job and its seeds appear together or not at all.
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec(
          "WITH j AS (INSERT INTO jobs (task_id, gpu_types, strategy, params, owner, tenant) "
          "   VALUES ($1, ARRAY(SELECT jsonb_array_elements_text($2::jsonb)), $3, $4::jsonb, "
          "     nullif($6, ''), nullif($7, '')) "
          "   RETURNING job_id), "
          " s AS (SELECT DISTINCT x->>'id' AS id, x->>'source' AS source, x->>'dialect' AS dialect "
          "   FROM jsonb_array_elements($5::jsonb) x), "
          " c AS (INSERT INTO candidates (candidate_id, source, dialect) "
          "   SELECT id, source, dialect FROM s ON CONFLICT (candidate_id) DO NOTHING), "
          " jc AS (INSERT INTO job_candidates (job_id, candidate_id, round, dialect) "
          "   SELECT j.job_id, s.id, 0, s.dialect FROM j, s) "
          "SELECT job_id FROM j",
          {task_id, nlohmann::json(gpu_types).dump(), strategy, params.dump(), seed_rows.dump(),
           owner, tenant}));
  return r.Get(0, "job_id");
}

absl::StatusOr<int64_t> JobStore::ActiveJobs(const std::string& tenant) {
  ASSIGN_OR_RETURN(PgResult r, pool_.Exec("SELECT count(*) AS n FROM jobs WHERE tenant = $1 "
                                          "  AND state IN ('queued', 'running')",
                                          {tenant}));
  return r.GetInt(0, "n");
}

absl::StatusOr<JobRow> JobStore::GetJob(const std::string& job_id) {
  if (!IsUuid(job_id)) return UnknownJob(job_id);
  ASSIGN_OR_RETURN(PgResult r,
                   pool_.Exec(std::string(kJobColumns) + "WHERE job_id = $1", {job_id}));
  std::vector<JobRow> rows = ParseJobs(r);
  if (rows.empty()) return UnknownJob(job_id);
  return rows[0];
}

absl::StatusOr<std::vector<JobRow>> JobStore::ListJobs(int limit, const std::string& task_id,
                                                       const std::vector<std::string>& tenants) {
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec(std::string(kJobColumns) +
                     "WHERE ($1 = '' OR task_id = $1) "
                     "  AND (cardinality($3::text[]) = 0 OR tenant = ANY($3::text[])) "
                     "ORDER BY created_at DESC, job_id LIMIT $2",
                 {task_id, std::to_string(limit), PgTextArray(tenants)}));
  return ParseJobs(r);
}

absl::StatusOr<std::vector<std::string>> JobStore::ActiveJobs() {
  ASSIGN_OR_RETURN(PgResult r, pool_.Exec("SELECT job_id FROM jobs WHERE state IN "
                                          "('queued', 'running') ORDER BY created_at"));
  std::vector<std::string> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(r.Get(i, "job_id"));
  return out;
}

absl::StatusOr<std::string> JobStore::CancelJob(const std::string& job_id) {
  if (!IsUuid(job_id)) return UnknownJob(job_id);
  // Evaluations a worker already holds finish and are stored; the rest never run.
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec("WITH upd AS (UPDATE jobs SET state = 'cancelled', finished_at = now(), "
                 "    updated_at = now() WHERE job_id = $1 AND state IN ('queued', 'running') "
                 "    RETURNING state), "
                 " del AS (DELETE FROM evaluations WHERE job_id = $1 AND state = 'queued' "
                 "    AND EXISTS (SELECT 1 FROM upd) RETURNING 1) "
                 "SELECT coalesce((SELECT state FROM upd), "
                 "                (SELECT state FROM jobs WHERE job_id = $1)) AS state",
                 {job_id}));
  if (r.IsNull(0, 0)) return UnknownJob(job_id);
  return r.Get(0, "state");
}

absl::Status JobStore::DropQueued(const std::string& job_id) {
  return pool_.Exec("DELETE FROM evaluations WHERE job_id = $1 AND state = 'queued'", {job_id})
      .status();
}

absl::Status JobStore::MarkRunning(const std::string& job_id) {
  return pool_
      .Exec(
          "UPDATE jobs SET state = 'running', started_at = coalesce(started_at, now()), "
          "updated_at = now() WHERE job_id = $1 AND state IN ('queued', 'running')",
          {job_id})
      .status();
}

absl::Status JobStore::Checkpoint(const std::string& job_id, const nlohmann::json& search_state,
                                  int rounds_done, uint64_t tokens_used) {
  return pool_
      .Exec(
          "UPDATE jobs SET search_state = $2::jsonb, rounds_done = $3, tokens_used = $4, "
          "  candidates_evaluated = (SELECT count(DISTINCT candidate_id) FROM evaluations "
          "                          WHERE job_id = $1 AND state = 'done'), "
          "  updated_at = now() WHERE job_id = $1",
          {job_id, search_state.dump(), std::to_string(rounds_done), std::to_string(tokens_used)})
      .status();
}

absl::Status JobStore::Finish(const std::string& job_id, const std::string& state,
                              const std::string& error) {
  return pool_
      .Exec(
          "UPDATE jobs SET state = $2, error = nullif($3, ''), finished_at = now(), "
          "  updated_at = now(), "
          "  candidates_evaluated = (SELECT count(DISTINCT candidate_id) FROM evaluations "
          "                          WHERE job_id = $1 AND state = 'done') "
          "WHERE job_id = $1 AND state IN ('queued', 'running')",
          {job_id, state, error})
      .status();
}

absl::StatusOr<double> JobStore::ElapsedS(const std::string& job_id) {
  ASSIGN_OR_RETURN(PgResult r, pool_.Exec("SELECT extract(epoch FROM now() - coalesce(started_at, "
                                          "now()))::float8 AS s FROM jobs WHERE job_id = $1",
                                          {job_id}));
  if (r.rows() == 0) return UnknownJob(job_id);
  return r.GetDouble(0, "s");
}

absl::StatusOr<std::string> JobStore::TaskSource(const std::string& task_id) {
  ASSIGN_OR_RETURN(PgResult r,
                   pool_.Exec("SELECT source FROM tasks WHERE task_id = $1", {task_id}));
  if (r.rows() == 0) return absl::NotFoundError("no task " + task_id);
  return r.Get(0, "source");
}

absl::StatusOr<std::vector<search::Member>> JobStore::LoadPopulation(const std::string& job_id) {
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec("SELECT jc.candidate_id, c.source, coalesce(jc.dialect, c.dialect) AS dialect, "
                 "  jc.round, "
                 "  array_to_json(jc.parent_ids)::text AS parents, "
                 "  coalesce(jc.analysis, '') AS analysis, coalesce(jc.idea, '') AS idea "
                 "FROM job_candidates jc JOIN candidates c USING (candidate_id) "
                 "WHERE jc.job_id = $1 ORDER BY jc.round, jc.created_at, jc.candidate_id",
                 {job_id}));
  std::vector<search::Member> out;
  std::map<std::string, size_t> index;
  for (int i = 0; i < r.rows(); ++i) {
    search::Member m;
    m.candidate_id = r.Get(i, "candidate_id");
    m.source = r.Get(i, "source");
    m.dialect = r.Get(i, "dialect");
    m.round = static_cast<int>(r.GetInt(i, "round"));
    for (const auto& p : ParseJson(r.Get(i, "parents"))) m.parents.push_back(p);
    m.analysis = r.Get(i, "analysis");
    m.idea = r.Get(i, "idea");
    index[m.candidate_id] = out.size();
    out.push_back(std::move(m));
  }
  ASSIGN_OR_RETURN(std::vector<JobEvaluation> results, JobResults(job_id));
  for (const JobEvaluation& e : results) {  // finishing order: the latest result wins
    auto it = index.find(e.candidate_id);
    if (it != index.end()) out[it->second].scores[e.gpu_type] = {e.verdict, e.speedup};
  }
  return out;
}

absl::Status JobStore::AddMember(const std::string& job_id, const search::Member& m,
                                 const std::string& prompt, const std::string& completion,
                                 int64_t llm_call_id) {
  return pool_
      .Exec(
          "WITH c AS (INSERT INTO candidates (candidate_id, source, dialect) "
          "  VALUES ($2, $3, $4) ON CONFLICT (candidate_id) DO NOTHING) "
          "INSERT INTO job_candidates (job_id, candidate_id, round, parent_ids, prompt, "
          "  analysis, completion, llm_call_id, idea, dialect) "
          "VALUES ($1, $2, $5, ARRAY(SELECT jsonb_array_elements_text($6::jsonb)), $7, $8, $9, "
          "  (SELECT call_id FROM llm_calls WHERE call_id = nullif($10, '0')::bigint), "
          "  nullif($11, ''), $4) "
          "ON CONFLICT (job_id, candidate_id) DO NOTHING",
          {job_id, m.candidate_id, m.source, m.dialect, std::to_string(m.round),
           nlohmann::json(m.parents).dump(), prompt, m.analysis, completion,
           std::to_string(llm_call_id), m.idea})
      .status();
}

absl::StatusOr<std::optional<JobStep>> JobStore::GetStep(const std::string& job_id, int round,
                                                         int step) {
  ASSIGN_OR_RETURN(PgResult r, pool_.Exec("SELECT kind, payload::text AS payload FROM job_steps "
                                          "WHERE job_id = $1 AND round = $2 AND step = $3",
                                          {job_id, std::to_string(round), std::to_string(step)}));
  if (r.rows() == 0) return std::optional<JobStep>();
  return std::optional<JobStep>(
      JobStep{round, step, r.Get(0, "kind"), ParseJson(r.Get(0, "payload")), ""});
}

absl::Status JobStore::PutStep(const std::string& job_id, const JobStep& step, uint64_t tokens) {
  return pool_
      .Exec(
          "INSERT INTO job_steps (job_id, round, step, kind, payload, tokens) "
          "VALUES ($1, $2, $3, $4, $5::jsonb, $6) ON CONFLICT DO NOTHING",
          {job_id, std::to_string(step.round), std::to_string(step.step), step.kind,
           step.payload.dump(), std::to_string(tokens)})
      .status();
}

absl::StatusOr<std::vector<JobStep>> JobStore::Steps(const std::string& job_id) {
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec("SELECT round, step, kind, payload::text AS payload, " KFORGE_PG_RFC3339(
                     "created_at") " AS created FROM job_steps WHERE job_id = $1 "
                                   "ORDER BY round, step",
                 {job_id}));
  std::vector<JobStep> out;
  for (int i = 0; i < r.rows(); ++i) {
    out.push_back({static_cast<int>(r.GetInt(i, "round")), static_cast<int>(r.GetInt(i, "step")),
                   r.Get(i, "kind"), ParseJson(r.Get(i, "payload")), r.Get(i, "created")});
  }
  return out;
}

absl::StatusOr<std::pair<int, int>> JobStore::BatchProgress(const std::string& batch_id) {
  ASSIGN_OR_RETURN(PgResult r, pool_.Exec("SELECT count(*) FILTER (WHERE state = 'done') AS done, "
                                          "  count(*) AS total FROM evaluations "
                                          "WHERE batch_id = $1::uuid",
                                          {batch_id}));
  return std::make_pair(static_cast<int>(r.GetInt(0, "done")),
                        static_cast<int>(r.GetInt(0, "total")));
}

absl::StatusOr<std::vector<JobEvaluation>> JobStore::BatchResults(const std::string& batch_id) {
  return FinishedEvaluations("batch_id = $1::uuid", batch_id);
}

absl::StatusOr<std::vector<JobEvaluation>> JobStore::JobResults(const std::string& job_id) {
  return FinishedEvaluations("job_id = $1", job_id);
}

namespace {

// The columns kClockColumns selects, from row `i`.
constexpr char kClockColumns[] = "e.speedup_clock, e.speedup_device, e.speedup_call";

ClockSpeedups ClocksOf(const PgResult& r, int i) {
  ClockSpeedups c;
  if (!r.IsNull(i, r.col("speedup_clock"))) c.clock = r.Get(i, "speedup_clock");
  if (!r.IsNull(i, r.col("speedup_device"))) c.device = r.GetDouble(i, "speedup_device");
  if (!r.IsNull(i, r.col("speedup_call"))) c.call = r.GetDouble(i, "speedup_call");
  return c;
}

}  // namespace

absl::StatusOr<std::vector<JobEvaluation>> JobStore::FinishedEvaluations(const std::string& where,
                                                                         const std::string& id) {
  ASSIGN_OR_RETURN(PgResult r, pool_.Exec(std::string("SELECT e.candidate_id, e.gpu_type, "
                                                      "e.verdict, e.speedup, ") +
                                              kClockColumns + " FROM evaluations e WHERE " +
                                              where +
                                              " AND state = 'done' "
                                              "ORDER BY finished_at, evaluation_id",
                                          {id}));
  std::vector<JobEvaluation> out;
  for (int i = 0; i < r.rows(); ++i) {
    JobEvaluation e;
    e.candidate_id = r.Get(i, "candidate_id");
    e.gpu_type = r.Get(i, "gpu_type");
    e.verdict = r.Get(i, "verdict");
    if (!r.IsNull(i, r.col("speedup"))) e.speedup = r.GetDouble(i, "speedup");
    e.clocks = ClocksOf(r, i);
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<std::vector<TrajectoryRow>> JobStore::Trajectory(const std::string& job_id) {
  if (!IsUuid(job_id)) return UnknownJob(job_id);
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec(
          "SELECT t.evaluation_id, " KFORGE_PG_RFC3339(
              "t.finished_at") " AS finished, coalesce(t.round, 0) AS round, t.gpu_type, "
                               "  e.candidate_id, t.verdict, t.speedup, "
                               "  coalesce(t.best_so_far, 0) AS best, " +
              std::string(kClockColumns) +
              " FROM job_trajectory t JOIN evaluations e USING (evaluation_id) "
                               "WHERE t.job_id = $1 ORDER BY t.finished_at, t.evaluation_id",
          {job_id}));
  std::vector<TrajectoryRow> out;
  for (int i = 0; i < r.rows(); ++i) {
    TrajectoryRow t;
    t.evaluation_id = r.Get(i, "evaluation_id");
    t.finished_at = r.Get(i, "finished");
    t.round = static_cast<int>(r.GetInt(i, "round"));
    t.gpu_type = r.Get(i, "gpu_type");
    t.candidate_id = r.Get(i, "candidate_id");
    t.verdict = r.Get(i, "verdict");
    if (!r.IsNull(i, r.col("speedup"))) t.speedup = r.GetDouble(i, "speedup");
    t.best_so_far = r.GetDouble(i, "best");
    t.clocks = ClocksOf(r, i);
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<std::vector<BestRow>> JobStore::Best(const std::string& task_id,
                                                    const std::string& job_id,
                                                    const std::string& gpu_type, int per_type,
                                                    const std::vector<std::string>& tenants) {
  if (!job_id.empty() && !IsUuid(job_id)) return UnknownJob(job_id);
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec(
          "SELECT gpu_type, candidate_id, source, speedup, ref_ms, cand_ms, speedup_clock, "
          "  speedup_device, speedup_call FROM ( "
          "  SELECT b.*, row_number() OVER (PARTITION BY gpu_type "
          "                                 ORDER BY speedup DESC, candidate_id) AS rank FROM ( "
          "    SELECT DISTINCT ON (e.ran_on_gpu_type, e.candidate_id) e.ran_on_gpu_type AS "
          "gpu_type, "
          "      e.candidate_id, c.source, e.speedup, coalesce(e.ref_median_ms, 0) AS ref_ms, "
          "      coalesce(e.cand_median_ms, 0) AS cand_ms, e.speedup_clock, e.speedup_device, "
          "      e.speedup_call "
          "    FROM evaluations e JOIN candidates c USING (candidate_id) "
          "    WHERE e.verdict = 'ok' AND ($1 = '' OR e.task_id = $1) "
          "      AND ($2 = '' OR e.job_id = nullif($2, '')::uuid) "
          "      AND ($3 = '' OR e.ran_on_gpu_type = $3) "
          "      AND (cardinality($5::text[]) = 0 OR EXISTS (SELECT 1 FROM batches bt "
          "        WHERE bt.batch_id = e.batch_id AND bt.tenant = ANY($5::text[]))) "
          "    ORDER BY e.ran_on_gpu_type, e.candidate_id, e.speedup DESC) b) ranked "
          "WHERE rank <= $4 ORDER BY gpu_type, speedup DESC, candidate_id",
          {task_id, job_id, gpu_type, std::to_string(per_type), PgTextArray(tenants)}));
  std::vector<BestRow> out;
  for (int i = 0; i < r.rows(); ++i) {
    BestRow b;
    b.gpu_type = r.Get(i, "gpu_type");
    b.candidate_id = r.Get(i, "candidate_id");
    b.source = r.Get(i, "source");
    b.speedup = r.GetDouble(i, "speedup");
    b.reference_ms = r.GetDouble(i, "ref_ms");
    b.candidate_ms = r.GetDouble(i, "cand_ms");
    b.clocks = ClocksOf(r, i);
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace kforge
