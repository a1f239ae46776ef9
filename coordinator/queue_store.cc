#include "coordinator/queue_store.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/sha256.h"
#include "common/base/utf8.h"
#include "common/result_json.h"
#include "common/status_macros.h"
#include "coordinator/result_columns.h"

namespace kforge {
namespace {

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
    " evaluation_id, candidate_id, task_id, batch_id, gpu_type, "
    "  coalesce(ran_on_gpu_type, '') AS ran_on, coalesce(worker_id::text, '') AS worker, "
    "  coalesce(client_ref, '') AS client_ref, attempts, "
    "  " KFORGE_PG_RFC3339("finished_at") " AS finished, "
    "  result::text AS result ";

// An evaluation going (back) into the queue: a CTE `e` over evaluations AS e ends with
// kToQueue, and kQueueInsert then inserts its queue row.
constexpr char kToQueue[] =
    " RETURNING e.evaluation_id, e.gpu_type, e.priority, e.batch_seq, e.enqueued_at, "
    "  coalesce(e.tenant, '') AS tenant";
constexpr char kQueueInsert[] =
    " INSERT INTO eval_queue (evaluation_id, gpu_type, priority, batch_seq, enqueued_at, tenant) "
    " SELECT evaluation_id, gpu_type, priority, batch_seq, enqueued_at, tenant FROM e ";

StoredEvaluation ParseEvaluation(const PgResult& r, int i) {
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
  return e;
}

std::vector<StoredEvaluation> ParseEvaluations(const PgResult& r) {
  std::vector<StoredEvaluation> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(ParseEvaluation(r, i));
  return out;
}

}  // namespace

absl::StatusOr<EnqueuedBatch> QueueStore::Enqueue(const BatchSpec& spec, int64_t max_queue_depth,
                                                  int64_t max_tenant_queued) {
  return InTransaction(pool_, [&](PgConnection& c) -> absl::StatusOr<EnqueuedBatch> {
    ASSIGN_OR_RETURN(PgResult check,
                     c.Exec("SELECT EXISTS (SELECT 1 FROM tasks WHERE task_id = $1) AS task, "
                            "  (SELECT count(*) FROM eval_queue) AS depth, "
                            "  (SELECT count(*) FROM eval_queue "
                            "   WHERE $2 <> '' AND tenant = $2) AS tenant_depth",
                            {spec.task_id, spec.tenant}));
    if (check.Get(0, "task") != "t") {
      return absl::NotFoundError(
          absl::StrCat("no task ", spec.task_id, " (submit it first with SubmitTask)"));
    }
    int64_t depth = check.GetInt(0, "depth");
    int64_t incoming = static_cast<int64_t>(spec.candidates.size() * spec.gpu_types.size());
    if (depth + incoming > max_queue_depth) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the evaluation queue holds ", depth, " items; ", incoming,
                       " more would pass its limit of ", max_queue_depth, "; retry later"));
    }
    if (int64_t mine = check.GetInt(0, "tenant_depth");
        max_tenant_queued > 0 && mine + incoming > max_tenant_queued) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "tenant ", spec.tenant, " has ", mine, " evaluations queued; ", incoming,
          " more would pass its quota of ", max_tenant_queued, "; retry when some have run"));
    }
    std::optional<std::string> job;
    if (!spec.job_id.empty()) job = spec.job_id;
    ASSIGN_OR_RETURN(PgResult batch,
                     c.Exec("INSERT INTO batches (task_id, job_id, owner, tenant) "
                            "VALUES ($1, $2, nullif($3, ''), nullif($4, '')) RETURNING batch_id",
                            {spec.task_id, job, spec.owner, spec.tenant}));
    EnqueuedBatch out;
    out.batch_id = batch.Get(0, "batch_id");
    std::vector<std::string> ids, sources, dialects, refs;
    for (const CandidateInput& cand : spec.candidates) {
      ids.push_back(Sha256Hex(cand.source));
      sources.push_back(cand.source);
      dialects.push_back(cand.dialect);
      refs.push_back(cand.client_ref);
    }
    RETURN_IF_ERROR(c.Exec("INSERT INTO candidates (candidate_id, source, dialect) "
                           "SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) "
                           "ON CONFLICT (candidate_id) DO NOTHING",
                           {PgTextArray(ids), PgTextArray(sources), PgTextArray(dialects)})
                        .status());
    // One evaluation per candidate x GPU type; batch_seq numbers them in that order, which is
    // also the order of their ids. A candidate given twice is evaluated once. The candidates
    // row is shared by every tenant that submits the source and keeps the first submitter's
    // dialect, so each evaluation carries the dialect this batch gave (migration 0011).
    ASSIGN_OR_RETURN(
        PgResult queued,
        c.Exec(absl::StrCat(
                   "WITH input AS ("
                   "  SELECT c.id, c.ref, c.dialect, g.gpu, "
                   "    ((c.n - 1) * cardinality($3::text[]) + g.n - 1)::int AS seq "
                   "  FROM unnest($1::text[], $2::text[], $10::text[]) "
                   "    WITH ORDINALITY AS c(id, ref, dialect, n) "
                   "  CROSS JOIN unnest($3::text[]) WITH ORDINALITY AS g(gpu, n)), "
                   "e AS (INSERT INTO evaluations AS e (candidate_id, task_id, batch_id, job_id, "
                   "    client_ref, gpu_type, settings, priority, batch_seq, tenant, dialect) "
                   "  SELECT id, $4, $5, $6, ref, gpu, $7::jsonb, $8, seq, nullif($9, ''), dialect "
                   "  FROM input ORDER BY seq "
                   "  ON CONFLICT (batch_id, candidate_id, gpu_type) DO NOTHING",
                   kToQueue, "), q AS (", kQueueInsert,
                   ") SELECT gpu_type, count(*) AS n FROM e GROUP BY gpu_type"),
               {PgTextArray(ids), PgTextArray(refs), PgTextArray(spec.gpu_types), spec.task_id,
                out.batch_id, job, spec.settings_json, std::to_string(spec.priority), spec.tenant,
                PgTextArray(dialects)}));
    for (int i = 0; i < queued.rows(); ++i) {
      out.queued_per_type[queued.Get(i, "gpu_type")] = queued.GetInt(i, "n");
      out.evaluations += static_cast<int>(queued.GetInt(i, "n"));
    }
    return out;
  });
}

absl::StatusOr<BatchProgress> QueueStore::Progress(const std::string& batch_id) {
  ASSIGN_OR_RETURN(PgResult r, pool_.Exec("SELECT b.task_id, coalesce(b.tenant, '') AS tenant, "
                                          "  count(e.*) AS total, "
                                          "  count(e.*) FILTER (WHERE e.state = 'done') AS done "
                                          "FROM batches b LEFT JOIN evaluations e USING (batch_id) "
                                          "WHERE b.batch_id = $1::uuid GROUP BY b.task_id, b.tenant",
                                          {batch_id}));
  if (r.rows() == 0) return absl::NotFoundError(absl::StrCat("no batch ", batch_id));
  BatchProgress p;
  p.task_id = r.Get(0, "task_id");
  p.tenant = r.Get(0, "tenant");
  p.total = static_cast<int>(r.GetInt(0, "total"));
  p.done = static_cast<int>(r.GetInt(0, "done"));
  return p;
}

absl::StatusOr<std::vector<StoredEvaluation>> QueueStore::FinishedSince(const std::string& batch_id,
                                                                        ResultCursor& cursor) {
  return FinishedWhere("batch_id", batch_id, cursor);
}

absl::StatusOr<std::vector<StoredEvaluation>> QueueStore::JobFinishedSince(
    const std::string& job_id, ResultCursor& cursor) {
  return FinishedWhere("job_id", job_id, cursor);
}

absl::StatusOr<std::vector<StoredEvaluation>> QueueStore::FinishedWhere(const char* column,
                                                                        const std::string& id,
                                                                        ResultCursor& cursor) {
  // At least one row, for the snapshot's xmin; evaluation_id is NULL when nothing is new.
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.ExecPrepared(
          absl::StrCat("SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin, f.* "
                       "FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT",
                       kEvaluationColumns,
                       ", done_xid::text AS done_xid FROM evaluations "
                       "  WHERE ", column, " = $1::uuid AND done_xid >= $2::xid8) f ON true "
                       "ORDER BY f.evaluation_id"),
          {id, std::to_string(cursor.xmin)}));
  uint64_t xmin = 0;
  if (!absl::SimpleAtoi(r.Get(0, "xmin"), &xmin)) {
    return absl::InternalError("unreadable snapshot xmin: " + r.Get(0, "xmin"));
  }
  std::vector<StoredEvaluation> fresh;
  const int id_col = r.col("evaluation_id");
  for (int i = 0; i < r.rows(); ++i) {
    if (r.IsNull(i, id_col)) continue;
    StoredEvaluation e = ParseEvaluation(r, i);
    uint64_t xid = 0;
    if (!absl::SimpleAtoi(r.Get(i, "done_xid"), &xid)) {
      return absl::InternalError("unreadable done_xid: " + r.Get(i, "done_xid"));
    }
    if (!cursor.recent.emplace(e.evaluation_id, xid).second) continue;  // returned before
    fresh.push_back(std::move(e));
  }
  cursor.delivered += static_cast<int64_t>(fresh.size());
  // Everything finished before the snapshot's oldest running transaction is visible now and
  // has been returned; only later transactions can still add rows.
  cursor.xmin = std::max(cursor.xmin, xmin);
  for (auto it = cursor.recent.begin(); it != cursor.recent.end();) {
    it = it->second < cursor.xmin ? cursor.recent.erase(it) : std::next(it);
  }
  return fresh;
}

absl::StatusOr<std::vector<StoredEvaluation>> QueueStore::Query(const EvaluationFilter& f) {
  auto param = [](const std::string& v) -> std::optional<std::string> {
    if (v.empty()) return std::nullopt;
    return v;
  };
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec(absl::StrCat(
                     "SELECT", kEvaluationColumns,
                     "FROM evaluations WHERE state = 'done' AND ($1::text IS NULL OR task_id = $1) "
                     "  AND ($2::uuid IS NULL OR job_id = $2::uuid) "
                     "  AND ($3::text IS NULL OR candidate_id = $3) "
                     "  AND ($4::text IS NULL OR gpu_type = $4 OR ran_on_gpu_type = $4) "
                     "  AND ($5::text IS NULL OR verdict = $5) "
                     "  AND (cardinality($7::text[]) = 0 OR EXISTS (SELECT 1 FROM batches b "
                     "    WHERE b.batch_id = evaluations.batch_id AND b.tenant = ANY($7::text[]))) "
                     "ORDER BY finished_at DESC, evaluation_id DESC LIMIT $6"),
                 {param(f.task_id), param(f.job_id), param(f.candidate_id), param(f.gpu_type),
                  param(f.verdict), std::to_string(f.limit), PgTextArray(f.tenants)}));
  return ParseEvaluations(r);
}

namespace {

// The lease statement's common part: $1 worker id, $2 its GPU type, $3 the lease timeout; the
// number of leases is a literal, so that a prepared statement's generic plan knows how few
// rows it handles. A worker an operator drained (workers.drained_at) has no lanes, so it is
// granted nothing. Fair share between tenants, then today's order within each tenant:
//  waiting   the (lane, tenant) pairs with queued work, a lane being the worker's GPU type or
//            "any"; found by skipping through eval_queue_tenant_lane_idx, one probe per pair
//  inflight  each tenant's leases held by workers of this GPU type (less the lease that
//            `released`, a CTE of the enclosing statement, just deleted, when given)
//  cands     per pair, its first n rows in lane order, FOR UPDATE SKIP LOCKED: n per tenant, not
//            fewer, so that rows locked by a concurrent leaser never leave a worker without work
//            that another tenant has queued
//  picked    the n rows of lowest share key: a tenant's in-flight count plus the row's rank
//            among the tenant's candidates, so the tenant with the least in flight gets the
//            next lease and n leases are spread as n single leases one after another would be;
//            equal keys go to the tenant served least recently on this GPU type
//            (tenant_shares), then to the row that waited longest
//  served    tenant_shares set to now() for the tenants leased to
//  granted   each lease with what the worker needs; the dialect is the evaluation's, as its
//            submitter gave it, not the shared candidate row's (that one only for evaluations
//            from before migration 0011, which have none)
// Defines `granted` and `passed`.
std::string LeaseCtes(int n, const char* released = nullptr) {
  const std::string limit = std::to_string(std::max(n, 0));
  return absl::StrCat(
      "drained AS (SELECT 1 FROM workers WHERE worker_id = $1::uuid AND drained_at IS NOT NULL), "
      "lanes AS (SELECT gpu_type FROM (SELECT $2::text AS gpu_type UNION ALL "
      "  SELECT 'any' WHERE $2 <> 'any') l WHERE NOT EXISTS (SELECT 1 FROM drained)), "
      "waiting AS (SELECT w.* FROM lanes CROSS JOIN LATERAL ("
      "  WITH RECURSIVE t AS ("
      "    (SELECT q.tenant FROM eval_queue q WHERE q.gpu_type = lanes.gpu_type "
      "     ORDER BY q.tenant LIMIT 1) "
      "    UNION ALL "
      "    SELECT (SELECT q.tenant FROM eval_queue q "
      "      WHERE q.gpu_type = lanes.gpu_type AND q.tenant > t.tenant ORDER BY q.tenant LIMIT 1) "
      "    FROM t WHERE t.tenant IS NOT NULL) "
      "  SELECT lanes.gpu_type, t.tenant FROM t WHERE t.tenant IS NOT NULL) w), "
      "inflight AS (SELECT tenant, sum(n) AS n FROM ("
      "  SELECT l.tenant, 1 AS n FROM leases l JOIN workers w USING (worker_id) "
      "  WHERE w.gpu_type = $2",
      released ? absl::StrCat(" UNION ALL SELECT tenant, -1 FROM ", released) : "",
      ") counted GROUP BY tenant), "
      "cands AS (SELECT wt.gpu_type AS lane, wt.tenant, coalesce(i.n, 0) AS inflight, "
      "  s.last_leased_at, c.* "
      "  FROM waiting wt LEFT JOIN inflight i USING (tenant) "
      "  LEFT JOIN tenant_shares s ON s.gpu_type = $2 AND s.tenant = wt.tenant "
      "  CROSS JOIN LATERAL ("
      "    SELECT q.evaluation_id, q.priority, q.batch_seq, q.enqueued_at FROM eval_queue q "
      "    WHERE q.gpu_type = wt.gpu_type AND q.tenant = wt.tenant "
      "    ORDER BY q.priority DESC, q.batch_seq, q.enqueued_at, q.evaluation_id "
      "    LIMIT ",
      limit,
      " FOR UPDATE SKIP LOCKED) c), "
      "picked AS (SELECT evaluation_id FROM (SELECT evaluation_id, enqueued_at, last_leased_at, "
      "    inflight + row_number() OVER (PARTITION BY tenant "
      "      ORDER BY priority DESC, batch_seq, enqueued_at, evaluation_id) AS share_key "
      "  FROM cands) ranked "
      "  ORDER BY share_key, last_leased_at NULLS FIRST, enqueued_at, evaluation_id LIMIT ",
      limit,
      "), "
      "gone AS (DELETE FROM eval_queue q USING picked p "
      "  WHERE q.evaluation_id = p.evaluation_id "
      "  RETURNING q.evaluation_id, q.gpu_type, q.tenant), "
      "upd AS (UPDATE evaluations e SET state = 'leased', attempts = e.attempts + 1 "
      "  FROM gone g WHERE e.evaluation_id = g.evaluation_id "
      "  RETURNING e.evaluation_id, e.attempts, e.task_id, e.candidate_id, e.dialect, "
      "  e.settings, "
      "  e.priority, e.batch_seq, e.enqueued_at, g.tenant, "
      "  extract(epoch FROM now() - e.enqueued_at) AS waited_s), "
      "ins AS (INSERT INTO leases (evaluation_id, worker_id, attempt, deadline, tenant) "
      "  SELECT evaluation_id, $1::uuid, attempts, now() + make_interval(secs => $3::float8), "
      "  tenant FROM upd RETURNING lease_id, evaluation_id), "
      "served_new AS (INSERT INTO tenant_shares (gpu_type, tenant, last_leased_at) "
      "  SELECT DISTINCT $2, tenant, now() FROM gone ON CONFLICT DO NOTHING), "
      "served_lock AS (SELECT s.gpu_type, s.tenant FROM tenant_shares s "
      "  WHERE s.gpu_type = $2 AND s.tenant IN (SELECT tenant FROM gone) "
      "  FOR UPDATE SKIP LOCKED), "
      "served AS (UPDATE tenant_shares s SET last_leased_at = now() FROM served_lock k "
      "  WHERE s.gpu_type = k.gpu_type AND s.tenant = k.tenant), "
      "passed AS (SELECT "
      "  (SELECT count(*) FROM cands WHERE lane = $2) - "
      "  (SELECT count(*) FROM gone WHERE gpu_type = $2) AS own, "
      "  (SELECT count(*) FROM cands WHERE lane <> $2) - "
      "  (SELECT count(*) FROM gone WHERE gpu_type <> $2) AS shared), "
      "granted AS (SELECT ins.lease_id, upd.evaluation_id, upd.attempts, t.name, "
      "  t.source AS task_source, t.options::text AS options, c.source AS cand_source, "
      "  coalesce(upd.dialect, c.dialect) AS dialect, "
      "  upd.settings::text AS settings, upd.waited_s, upd.priority, upd.batch_seq, "
      "  upd.enqueued_at FROM ins JOIN upd USING (evaluation_id) "
      "  JOIN tasks t ON t.task_id = upd.task_id "
      "  JOIN candidates c ON c.candidate_id = upd.candidate_id) ");
}

// Grants in queue order.
constexpr char kGrantOrder[] =
    " ORDER BY g.priority DESC, g.batch_seq, g.enqueued_at, g.evaluation_id";

// Reads `granted` and `passed` columns from rows of a statement built on kLeaseCtes; rows
// without a lease_id carry no grant.
Leased ParseLeased(const PgResult& r, const std::string& gpu_type) {
  Leased out;
  const int lease_col = r.col("lease_id");
  for (int i = 0; i < r.rows(); ++i) {
    if (i == 0) {
      if (int64_t n = r.GetInt(0, "passed_own"); n > 0) out.passed_over[gpu_type] = n;
      if (int64_t n = r.GetInt(0, "passed_shared"); n > 0) out.passed_over["any"] = n;
    }
    if (r.IsNull(i, lease_col)) continue;
    LeaseGrant g;
    g.lease_id = r.Get(i, lease_col);
    g.evaluation_id = r.GetInt(i, "evaluation_id");
    g.attempt = static_cast<int>(r.GetInt(i, "attempts"));
    g.task_name = r.Get(i, "name");
    g.task_source = r.Get(i, "task_source");
    g.task_options_json = r.Get(i, "options");
    g.candidate_source = r.Get(i, "cand_source");
    g.dialect = r.Get(i, "dialect");
    g.settings_json = r.Get(i, "settings");
    g.waited_s = r.GetDouble(i, "waited_s");
    out.grants.push_back(std::move(g));
  }
  return out;
}

PgParams LeaseParams(const LeaseRequest& req) {
  return {req.worker_id, req.gpu_type, std::to_string(req.lease_timeout_s)};
}

}  // namespace

absl::StatusOr<Leased> QueueStore::Lease(const LeaseRequest& req) {
  if (req.max_leases <= 0) return Leased{};
  // The lease alone is committed without waiting for the WAL flush (see the header).
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.ExecPrepared(
          absl::StrCat("WITH ", LeaseCtes(req.max_leases),
                       "SELECT set_config('synchronous_commit', 'off', true) AS async, "
                       "  passed.own AS passed_own, passed.shared AS passed_shared, g.* "
                       "FROM passed LEFT JOIN granted g ON true",
                       kGrantOrder),
          LeaseParams(req)));
  return ParseLeased(r, req.gpu_type);
}

absl::Status QueueStore::Heartbeat(const std::string& worker_id,
                                   const std::vector<std::string>& lease_ids,
                                   double lease_timeout_s) {
  // Committed without waiting for the WAL flush: a lost heartbeat only moves deadlines back.
  return pool_
      .ExecPrepared(
          "WITH w AS (UPDATE workers SET last_heartbeat = now() WHERE worker_id = $1::uuid), "
          "l AS (UPDATE leases SET deadline = now() + make_interval(secs => $3::float8) "
          "  WHERE worker_id = $1::uuid AND lease_id = ANY($2::uuid[])) "
          "SELECT set_config('synchronous_commit', 'off', true)",
          {worker_id, PgTextArray(lease_ids), std::to_string(lease_timeout_s)})
      .status();
}

absl::StatusOr<Completion> QueueStore::CompleteAndLease(const std::string& lease_id,
                                                        const v1::EvalResult& result,
                                                        const LeaseRequest& next) {
  // Parameters $4.. : lease id, the result JSON, then the result's columns (result_columns.h).
  // The result is stored only if this worker's lease still exists, and only if the hashes it
  // carries (a worker's failures may carry none) are those of the leased task and candidate:
  // task_id and candidate_id are the sources' SHA-256.
  PgParams params = LeaseParams(next);
  params.insert(params.end(), {lease_id, ResultToJson(result)});
  for (ResultColumn& c : ResultColumns(result)) params.push_back(std::move(c.value));
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.ExecPrepared(
          absl::StrCat(
              "WITH mismatch AS (SELECT concat_ws('; ', "
              "    CASE WHEN ($5::jsonb)->>'task_sha256' NOT IN ('', e.task_id) "
              "      THEN 'task_sha256 is ' || left(($5::jsonb)->>'task_sha256', 64) || "
              "        ' but the leased task''s is ' || e.task_id END, "
              "    CASE WHEN ($5::jsonb)->>'candidate_sha256' NOT IN ('', e.candidate_id) "
              "      THEN 'candidate_sha256 is ' || left(($5::jsonb)->>'candidate_sha256', 64) || "
              "        ' but the leased candidate''s is ' || e.candidate_id END) AS why "
              "  FROM leases x JOIN evaluations e USING (evaluation_id) "
              "  WHERE x.lease_id = $4::uuid AND x.worker_id = $1::uuid), "
              "l AS (DELETE FROM leases WHERE lease_id = $4::uuid AND worker_id = $1::uuid "
              "  AND NOT EXISTS (SELECT 1 FROM mismatch WHERE why <> '') "
              "  RETURNING evaluation_id, tenant), "
              "done AS (UPDATE evaluations e SET state = 'done', ",
              ResultColumnAssignments(6),
              ", result = $5::jsonb, system_info = ($5::jsonb)->'system', "
              "  worker_id = $1::uuid, ran_on_gpu_type = $2, finished_at = now(), "
              "  worker_token_id = (SELECT token_id FROM workers WHERE worker_id = $1::uuid), "
              "  done_xid = pg_current_xact_id() "
              "  FROM l WHERE e.evaluation_id = l.evaluation_id AND e.state = 'leased' "
              "  RETURNING e.batch_id), ",
              LeaseCtes(next.max_leases, "l"),
              "SELECT (SELECT batch_id::text FROM done) AS done_batch, "
              "  (SELECT why FROM mismatch) AS mismatch, "
              "  passed.own AS passed_own, passed.shared AS passed_shared, g.* "
              "FROM passed LEFT JOIN granted g ON true",
              kGrantOrder),
          params));
  Completion out;
  out.stored = !r.IsNull(0, r.col("done_batch"));
  if (out.stored) out.batch_id = r.Get(0, "done_batch");
  if (!r.IsNull(0, r.col("mismatch"))) out.mismatch = r.Get(0, "mismatch");
  out.next = ParseLeased(r, next.gpu_type);
  return out;
}

absl::StatusOr<std::string> QueueStore::Release(const std::string& lease_id,
                                                const std::string& worker_id) {
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.ExecPrepared(absl::StrCat("WITH l AS (DELETE FROM leases WHERE lease_id = $1::uuid "
                                      "  AND worker_id = $2::uuid RETURNING evaluation_id), "
                                      "e AS (UPDATE evaluations e SET state = 'queued', "
                                      "  attempts = e.attempts - 1 "
                                      "  FROM l WHERE e.evaluation_id = l.evaluation_id",
                                      kToQueue, ")", kQueueInsert, "RETURNING gpu_type"),
                         {lease_id, worker_id}));
  return r.rows() == 0 ? std::string() : r.Get(0, "gpu_type");
}

namespace {

// The reason an evaluation ended with after its last attempt's result was refused ($3).
constexpr char kRefusedReason[] =
    "('result_refused: attempt ' || e.attempts || ' of ' || e.max_attempts || "
    "' ended with a result the coordinator refused (' || $3 || '); not retried again')";

}  // namespace

absl::StatusOr<Refusal> QueueStore::Refuse(const std::string& lease_id,
                                           const std::string& worker_id,
                                           const std::string& reason) {
  // The reason is ours, but may quote what the worker or the database said: stored as text
  // and jsonb, it must hold no NUL and stay small.
  std::string why = PrintableUtf8(reason.substr(0, 1024));
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.ExecPrepared(
          absl::StrCat(
              "WITH l AS (DELETE FROM leases WHERE lease_id = $1::uuid "
              "  AND worker_id = $2::uuid RETURNING evaluation_id), "
              "ended AS (UPDATE evaluations e SET state = 'done', verdict = 'runtime_error', "
              "  rule = 'result_refused', finished_at = now(), done_xid = pg_current_xact_id(), "
              "  reason = ",
              kRefusedReason,
              ", result = jsonb_build_object('verdict', "
              "    'runtime_error', 'rule', 'result_refused', 'reason', ",
              kRefusedReason,
              ", "
              "    'speedup', NULL) "
              "  FROM l WHERE e.evaluation_id = l.evaluation_id AND e.state = 'leased' "
              "    AND e.attempts >= e.max_attempts RETURNING e.batch_id), "
              "e AS (UPDATE evaluations e SET state = 'queued' "
              "  FROM l WHERE e.evaluation_id = l.evaluation_id AND e.state = 'leased' "
              "    AND e.attempts < e.max_attempts",
              kToQueue, "), q AS (", kQueueInsert,
              " RETURNING gpu_type) "
              "SELECT (SELECT gpu_type FROM q) AS requeued, "
              "  (SELECT batch_id::text FROM ended) AS ended"),
          {lease_id, worker_id, why}));
  Refusal out;
  if (!r.IsNull(0, r.col("requeued"))) out.requeued_gpu_type = r.Get(0, "requeued");
  if (!r.IsNull(0, r.col("ended"))) out.ended_batch_id = r.Get(0, "ended");
  return out;
}

absl::StatusOr<std::map<std::string, int64_t>> QueueStore::ReleaseWorkerLeases(
    const std::string& worker_id) {
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec(
          absl::StrCat(
              "WITH l AS (DELETE FROM leases WHERE worker_id = $1::uuid RETURNING evaluation_id), "
              "e AS (UPDATE evaluations e SET state = 'queued', attempts = e.attempts - 1 "
              "  FROM l WHERE e.evaluation_id = l.evaluation_id AND e.state = 'leased'",
              kToQueue, "), q AS (", kQueueInsert,
              "RETURNING gpu_type) SELECT gpu_type, count(*) AS n FROM q GROUP BY gpu_type"),
          {worker_id}));
  std::map<std::string, int64_t> out;
  for (int i = 0; i < r.rows(); ++i) out[r.Get(i, "gpu_type")] = r.GetInt(i, "n");
  return out;
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
               "  rule = 'worker_lost', finished_at = now(), done_xid = pg_current_xact_id(), "
               "  reason = 'worker_lost: the worker evaluating it stopped responding ' || "
               "    attempts || ' times; not retried again', "
               "  result = jsonb_build_object('verdict', 'runtime_error', 'rule', 'worker_lost', "
               "    'reason', 'worker_lost: the worker evaluating it stopped responding ' || "
               "    attempts || ' times', 'speedup', NULL) "
               "WHERE evaluation_id = ANY($1::bigint[]) AND state = 'leased' "
               "  AND attempts >= max_attempts RETURNING batch_id",
               {array}));
    stats.abandoned = dead.rows();
    for (int i = 0; i < dead.rows(); ++i) stats.abandoned_batches.insert(dead.Get(i, "batch_id"));
    // Back to the queue at the position it had: same batch_seq and enqueue time.
    ASSIGN_OR_RETURN(
        PgResult back,
        c.Exec(absl::StrCat("WITH e AS (UPDATE evaluations e SET state = 'queued' "
                            "  WHERE evaluation_id = ANY($1::bigint[]) AND state = 'leased'",
                            kToQueue, ")", kQueueInsert, "RETURNING gpu_type"),
               {array}));
    stats.requeued = back.rows();
    for (int i = 0; i < back.rows(); ++i) ++stats.requeued_per_type[back.Get(i, "gpu_type")];
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
  return pool_.Exec("UPDATE workers SET state = $2 WHERE worker_id = $1::uuid", {worker_id, state})
      .status();
}

}  // namespace kforge
