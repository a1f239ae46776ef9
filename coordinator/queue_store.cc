#include "coordinator/queue_store.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/sha256.h"
#include "common/result_json.h"
#include "common/status_macros.h"

namespace kforge {
namespace {

// A text[] literal for PostgreSQL from plain strings (quoted, escaped).
std::string TextArray(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ",";
    out += "\"";
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += "\"";
  }
  return out + "}";
}

// Runs `body` in a transaction on one connection, rolling back on error.
template <typename F>
auto InTransaction(PgPool& pool, F body) -> decltype(body(std::declval<PgConnection&>())) {
  auto lease = pool.Acquire();
  if (!lease.ok()) return lease.status();
  PgConnection& conn = **lease;
  if (auto s = conn.Exec("BEGIN"); !s.ok()) return s.status();
  auto result = body(conn);
  if (!result.ok()) {
    (void)conn.Exec("ROLLBACK");
    return result;
  }
  if (auto s = conn.Exec("COMMIT"); !s.ok()) return s.status();
  return result;
}

// The columns every StoredEvaluation is read from.
constexpr char kEvaluationColumns[] =
    "SELECT evaluation_id, candidate_id, task_id, batch_id, gpu_type, "
    "  coalesce(ran_on_gpu_type, '') AS ran_on, coalesce(worker_id::text, '') AS worker, "
    "  coalesce(client_ref, '') AS client_ref, attempts, "
    "  to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') AS finished, "
    "  result::text AS result FROM evaluations ";

std::vector<StoredEvaluation> ParseEvaluations(const PgResult& r) {
  std::vector<StoredEvaluation> out;
  for (int i = 0; i < r.rows(); ++i) {
    StoredEvaluation e;
    e.evaluation_id = r.GetInt(i, "evaluation_id");
    e.candidate_id = r.Get(i, "candidate_id");
    e.task_id = r.Get(i, "task_id");
    e.batch_id = r.Get(i, "batch_id");
    e.gpu_type = r.Get(i, "gpu_type");
    e.ran_on_gpu_type = r.Get(i, "ran_on");
    e.worker_id = r.Get(i, "worker");
    e.client_ref = r.Get(i, "client_ref");
    e.attempts = static_cast<int>(r.GetInt(i, "attempts"));
    e.finished_at = r.Get(i, "finished");
    e.result_json = r.Get(i, "result");
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

absl::StatusOr<EnqueuedBatch> QueueStore::Enqueue(const BatchSpec& spec,
                                                  int64_t max_queue_depth) {
  return InTransaction(pool_, [&](PgConnection& c) -> absl::StatusOr<EnqueuedBatch> {
    ASSIGN_OR_RETURN(PgResult task, c.Exec("SELECT 1 FROM tasks WHERE task_id = $1",
                                           {spec.task_id}));
    if (task.rows() == 0) {
      return absl::NotFoundError(absl::StrCat("no task ", spec.task_id,
                                              " (submit it first with SubmitTask)"));
    }
    ASSIGN_OR_RETURN(PgResult depth, c.Exec("SELECT count(*) AS n FROM eval_queue"));
    int64_t incoming = static_cast<int64_t>(spec.candidates.size() * spec.gpu_types.size());
    if (depth.GetInt(0, "n") + incoming > max_queue_depth) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the evaluation queue holds ", depth.GetInt(0, "n"), " items; ", incoming,
          " more would pass its limit of ", max_queue_depth, "; retry later"));
    }
    std::optional<std::string> job;
    if (!spec.job_id.empty()) job = spec.job_id;
    ASSIGN_OR_RETURN(PgResult batch,
                     c.Exec("INSERT INTO batches (task_id, job_id) VALUES ($1, $2) "
                            "RETURNING batch_id",
                            {spec.task_id, job}));
    EnqueuedBatch out;
    out.batch_id = batch.Get(0, "batch_id");
    int seq = 0;
    for (const CandidateInput& cand : spec.candidates) {
      std::string cid = Sha256Hex(cand.source);
      RETURN_IF_ERROR(c.Exec("INSERT INTO candidates (candidate_id, source, dialect) "
                             "VALUES ($1, $2, $3) ON CONFLICT (candidate_id) DO NOTHING",
                             {cid, cand.source, cand.dialect})
                          .status());
      for (const std::string& gpu : spec.gpu_types) {
        RETURN_IF_ERROR(
            c.Exec("WITH e AS (INSERT INTO evaluations (candidate_id, task_id, batch_id, job_id, "
                   "  client_ref, gpu_type, settings, priority) "
                   "  VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8) "
                   "  ON CONFLICT (batch_id, candidate_id, gpu_type) DO NOTHING "
                   "  RETURNING evaluation_id) "
                   "INSERT INTO eval_queue (evaluation_id, gpu_type, priority, batch_seq) "
                   "SELECT evaluation_id, $6, $8, $9 FROM e",
                   {cid, spec.task_id, out.batch_id, job, cand.client_ref, gpu,
                    spec.settings_json, std::to_string(spec.priority), std::to_string(seq)})
                .status());
        ++seq;
      }
    }
    ASSIGN_OR_RETURN(PgResult n, c.Exec("SELECT count(*) AS n FROM evaluations WHERE batch_id = $1",
                                        {out.batch_id}));
    out.evaluations = static_cast<int>(n.GetInt(0, "n"));
    return out;
  });
}

absl::StatusOr<BatchProgress> QueueStore::Progress(const std::string& batch_id) {
  ASSIGN_OR_RETURN(PgResult r,
                   pool_.Exec("SELECT b.task_id, count(e.*) AS total, "
                              "  count(e.*) FILTER (WHERE e.state = 'done') AS done "
                              "FROM batches b LEFT JOIN evaluations e USING (batch_id) "
                              "WHERE b.batch_id = $1::uuid GROUP BY b.task_id",
                              {batch_id}));
  if (r.rows() == 0) return absl::NotFoundError(absl::StrCat("no batch ", batch_id));
  BatchProgress p;
  p.task_id = r.Get(0, "task_id");
  p.total = static_cast<int>(r.GetInt(0, "total"));
  p.done = static_cast<int>(r.GetInt(0, "done"));
  return p;
}

absl::StatusOr<std::vector<StoredEvaluation>> QueueStore::FinishedExcept(
    const std::string& batch_id, const std::set<int64_t>& delivered) {
  std::string skip = "{" + absl::StrJoin(delivered, ",") + "}";
  ASSIGN_OR_RETURN(PgResult r,
                   pool_.Exec(absl::StrCat(kEvaluationColumns,
                                           "WHERE batch_id = $1::uuid AND state = 'done' "
                                           "  AND NOT (evaluation_id = ANY($2::bigint[])) "
                                           "ORDER BY evaluation_id"),
                              {batch_id, skip}));
  return ParseEvaluations(r);
}

absl::StatusOr<std::vector<StoredEvaluation>> QueueStore::Query(const EvaluationFilter& f) {
  auto param = [](const std::string& v) -> std::optional<std::string> {
    if (v.empty()) return std::nullopt;
    return v;
  };
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec(absl::StrCat(kEvaluationColumns,
                              "WHERE state = 'done' AND ($1::text IS NULL OR task_id = $1) "
                              "  AND ($2::uuid IS NULL OR job_id = $2::uuid) "
                              "  AND ($3::text IS NULL OR candidate_id = $3) "
                              "  AND ($4::text IS NULL OR gpu_type = $4 OR ran_on_gpu_type = $4) "
                              "  AND ($5::text IS NULL OR verdict = $5) "
                              "ORDER BY finished_at DESC, evaluation_id DESC LIMIT $6"),
                 {param(f.task_id), param(f.job_id), param(f.candidate_id), param(f.gpu_type),
                  param(f.verdict), std::to_string(f.limit)}));
  return ParseEvaluations(r);
}

absl::StatusOr<std::vector<LeaseGrant>> QueueStore::Lease(const std::string& worker_id,
                                                          const std::string& gpu_type,
                                                          int max_leases, double lease_timeout_s) {
  if (max_leases <= 0) return std::vector<LeaseGrant>{};
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec(
          "WITH picked AS ("
          "  SELECT evaluation_id FROM eval_queue WHERE gpu_type IN ($2, 'any') "
          "  ORDER BY priority DESC, batch_seq, enqueued_at, evaluation_id "
          "  FOR UPDATE SKIP LOCKED LIMIT $3), "
          "gone AS (DELETE FROM eval_queue q USING picked p "
          "  WHERE q.evaluation_id = p.evaluation_id RETURNING q.evaluation_id), "
          "upd AS (UPDATE evaluations e SET state = 'leased', attempts = e.attempts + 1 "
          "  FROM gone g WHERE e.evaluation_id = g.evaluation_id "
          "  RETURNING e.evaluation_id, e.attempts, e.task_id, e.candidate_id, e.settings, "
          "  extract(epoch FROM now() - e.enqueued_at) AS waited_s), "
          "ins AS (INSERT INTO leases (evaluation_id, worker_id, attempt, deadline) "
          "  SELECT evaluation_id, $1::uuid, attempts, now() + make_interval(secs => $4::float8) "
          "  FROM upd RETURNING lease_id, evaluation_id) "
          "SELECT ins.lease_id, upd.evaluation_id, upd.attempts, t.name, t.source AS task_source, "
          "  t.options::text AS options, c.source AS cand_source, c.dialect, "
          "  upd.settings::text AS settings, upd.waited_s "
          "FROM ins JOIN upd USING (evaluation_id) JOIN tasks t ON t.task_id = upd.task_id "
          "JOIN candidates c ON c.candidate_id = upd.candidate_id ORDER BY upd.evaluation_id",
          {worker_id, gpu_type, std::to_string(max_leases), std::to_string(lease_timeout_s)}));
  std::vector<LeaseGrant> out;
  for (int i = 0; i < r.rows(); ++i) {
    LeaseGrant g;
    g.lease_id = r.Get(i, "lease_id");
    g.evaluation_id = r.GetInt(i, "evaluation_id");
    g.attempt = static_cast<int>(r.GetInt(i, "attempts"));
    g.task_name = r.Get(i, "name");
    g.task_source = r.Get(i, "task_source");
    g.task_options_json = r.Get(i, "options");
    g.candidate_source = r.Get(i, "cand_source");
    g.dialect = r.Get(i, "dialect");
    g.settings_json = r.Get(i, "settings");
    g.waited_s = r.GetDouble(i, "waited_s");
    out.push_back(std::move(g));
  }
  return out;
}

absl::Status QueueStore::Heartbeat(const std::string& worker_id,
                                   const std::vector<std::string>& lease_ids,
                                   double lease_timeout_s) {
  RETURN_IF_ERROR(pool_.Exec("UPDATE workers SET last_heartbeat = now() WHERE worker_id = $1::uuid",
                             {worker_id})
                      .status());
  if (lease_ids.empty()) return absl::OkStatus();
  return pool_
      .Exec("UPDATE leases SET deadline = now() + make_interval(secs => $3::float8) "
            "WHERE worker_id = $1::uuid AND lease_id = ANY($2::uuid[])",
            {worker_id, TextArray(lease_ids), std::to_string(lease_timeout_s)})
      .status();
}

absl::StatusOr<bool> QueueStore::Complete(const std::string& lease_id,
                                          const std::string& worker_id,
                                          const v1::EvalResult& result) {
  std::optional<std::string> speedup;
  if (result.has_speedup()) speedup = std::to_string(result.speedup());
  std::optional<std::string> ref_ms, cand_ms;
  if (result.reference().n() > 0) ref_ms = std::to_string(result.reference().median_ms());
  if (result.candidate().n() > 0) cand_ms = std::to_string(result.candidate().median_ms());
  v1::EvalResult system_only;
  *system_only.mutable_system() = result.system();
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec(
          "WITH l AS (DELETE FROM leases WHERE lease_id = $1::uuid AND worker_id = $2::uuid "
          "  RETURNING evaluation_id) "
          "UPDATE evaluations e SET state = 'done', verdict = $3, reason = $4, rule = $5, "
          "  speedup = $6::float8, ref_median_ms = $7::float8, cand_median_ms = $8::float8, "
          "  result = $9::jsonb, system_info = ($9::jsonb)->'system', compiler_log = $10, "
          "  worker_id = $2::uuid, finished_at = now(), "
          "  ran_on_gpu_type = (SELECT gpu_type FROM workers WHERE worker_id = $2::uuid) "
          "FROM l WHERE e.evaluation_id = l.evaluation_id AND e.state = 'leased' "
          "RETURNING e.evaluation_id",
          {lease_id, worker_id, std::string(VerdictName(result.verdict())), result.reason(),
           result.rule(), speedup, ref_ms, cand_ms, ResultToJson(result), result.compiler_log()}));
  return r.rows() == 1;
}

absl::Status QueueStore::Release(const std::string& lease_id, const std::string& worker_id) {
  return pool_
      .Exec("WITH l AS (DELETE FROM leases WHERE lease_id = $1::uuid AND worker_id = $2::uuid "
            "  RETURNING evaluation_id), "
            "e AS (UPDATE evaluations e SET state = 'queued', attempts = e.attempts - 1 FROM l "
            "  WHERE e.evaluation_id = l.evaluation_id RETURNING e.evaluation_id, e.gpu_type, "
            "  e.priority) "
            "INSERT INTO eval_queue (evaluation_id, gpu_type, priority) "
            "SELECT evaluation_id, gpu_type, priority FROM e",
            {lease_id, worker_id})
      .status();
}

absl::StatusOr<ReclaimStats> QueueStore::ReclaimExpired() {
  return InTransaction(pool_, [&](PgConnection& c) -> absl::StatusOr<ReclaimStats> {
    ASSIGN_OR_RETURN(
        PgResult expired,
        c.Exec("DELETE FROM leases WHERE lease_id IN (SELECT lease_id FROM leases "
               "  WHERE deadline < now() FOR UPDATE SKIP LOCKED) RETURNING evaluation_id"));
    ReclaimStats stats;
    if (expired.rows() == 0) return stats;
    std::vector<std::string> ids;
    for (int i = 0; i < expired.rows(); ++i) ids.push_back(expired.Get(i, "evaluation_id"));
    std::string array = "{" + absl::StrJoin(ids, ",") + "}";
    ASSIGN_OR_RETURN(
        PgResult dead,
        c.Exec("UPDATE evaluations SET state = 'done', verdict = 'runtime_error', "
               "  rule = 'worker_lost', finished_at = now(), "
               "  reason = 'worker_lost: the worker evaluating it stopped responding ' || "
               "    attempts || ' times; not retried again', "
               "  result = jsonb_build_object('verdict', 'runtime_error', 'rule', 'worker_lost', "
               "    'reason', 'worker_lost: the worker evaluating it stopped responding ' || "
               "    attempts || ' times', 'speedup', NULL) "
               "WHERE evaluation_id = ANY($1::bigint[]) AND state = 'leased' "
               "  AND attempts >= max_attempts RETURNING evaluation_id",
               {array}));
    stats.abandoned = dead.rows();
    ASSIGN_OR_RETURN(
        PgResult back,
        c.Exec("WITH e AS (UPDATE evaluations SET state = 'queued' "
               "  WHERE evaluation_id = ANY($1::bigint[]) AND state = 'leased' "
               "  RETURNING evaluation_id, gpu_type, priority) "
               "INSERT INTO eval_queue (evaluation_id, gpu_type, priority) "
               "SELECT evaluation_id, gpu_type, priority FROM e RETURNING evaluation_id",
               {array}));
    stats.requeued = back.rows();
    return stats;
  });
}

absl::StatusOr<std::map<std::string, int64_t>> QueueStore::QueueDepth() {
  ASSIGN_OR_RETURN(PgResult r, pool_.Exec("SELECT gpu_type, count(*) AS n FROM eval_queue "
                                          "GROUP BY gpu_type"));
  std::map<std::string, int64_t> out;
  for (int i = 0; i < r.rows(); ++i) out[r.Get(i, "gpu_type")] = r.GetInt(i, "n");
  return out;
}

absl::StatusOr<std::map<std::string, int64_t>> QueueStore::LiveWorkers(double window_s) {
  ASSIGN_OR_RETURN(PgResult r,
                   pool_.Exec("SELECT gpu_type, count(*) AS n FROM workers WHERE state <> 'gone' "
                              "  AND last_heartbeat > now() - make_interval(secs => $1::float8) "
                              "GROUP BY gpu_type",
                              {std::to_string(window_s)}));
  std::map<std::string, int64_t> out;
  for (int i = 0; i < r.rows(); ++i) out[r.Get(i, "gpu_type")] = r.GetInt(i, "n");
  return out;
}

absl::Status QueueStore::MarkWorker(const std::string& worker_id, const std::string& state) {
  return pool_.Exec("UPDATE workers SET state = $2 WHERE worker_id = $1::uuid",
                    {worker_id, state})
      .status();
}

}  // namespace kforge
