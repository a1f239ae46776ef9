#include "coordinator/pg_store.h"

#include "common/base/sha256.h"
#include "common/status_macros.h"

// The drain columns of `workers w`, read by ReadDrain.
#define KFORGE_WORKER_DRAIN_COLUMNS                                       \
  "(w.drained_at IS NOT NULL) AS drained, coalesce(w.drained_by, '') AS drained_by, " \
  "coalesce(" KFORGE_PG_RFC3339("w.drained_at") ", '') AS drained_at "

namespace kforge {
namespace {

void ReadDrain(const PgResult& r, int row, WorkerRow* w) {
  w->drained = r.Get(row, "drained") == "t";
  w->drained_by = r.Get(row, "drained_by");
  w->drained_at = r.Get(row, "drained_at");
}

}  // namespace

absl::StatusOr<StoredTask> PgStore::PutTask(const std::string& name, const std::string& source,
                                            const std::string& options_json) {
  StoredTask out;
  out.task_id = Sha256Hex(source);
  ASSIGN_OR_RETURN(PgResult r,
                   pool_.Exec("INSERT INTO tasks (task_id, name, source, options) "
                              "VALUES ($1, $2, $3, $4::jsonb) ON CONFLICT (task_id) DO NOTHING",
                              {out.task_id, name, source, options_json}));
  out.created = r.affected() == 1;
  return out;
}

absl::StatusOr<std::string> PgStore::RegisterWorker(const std::string& hostname,
                                                    const std::string& gpu_type, int slots,
                                                    const std::string& facts_json,
                                                    const std::string& token_id) {
  std::optional<std::string> token;
  if (!token_id.empty()) token = token_id;
  ASSIGN_OR_RETURN(PgResult r,
                   pool_.Exec("INSERT INTO workers (hostname, gpu_type, slots, facts, token_id) "
                              "VALUES ($1, $2, $3, $4::jsonb, $5::uuid) RETURNING worker_id",
                              {hostname, gpu_type, std::to_string(slots), facts_json, token}));
  return r.Get(0, "worker_id");
}

absl::StatusOr<WorkerRow> PgStore::GetWorker(const std::string& worker_id) {
  auto r = pool_.Exec("SELECT worker_id, hostname, gpu_type, slots, "
                      "  coalesce(token_id::text, '') AS token_id FROM workers "
                      "WHERE worker_id::text = $1",
                      {worker_id});
  if (!r.ok()) return r.status();
  if (r->rows() == 0) {
    return absl::NotFoundError("unknown worker " + worker_id + "; register again");
  }
  WorkerRow w;
  w.worker_id = r->Get(0, "worker_id");
  w.hostname = r->Get(0, "hostname");
  w.gpu_type = r->Get(0, "gpu_type");
  w.slots = static_cast<int>(r->GetInt(0, "slots"));
  w.token_id = r->Get(0, "token_id");
  return w;
}

absl::StatusOr<std::vector<std::string>> PgStore::RegisteredGpuTypes() {
  ASSIGN_OR_RETURN(PgResult r,
                   pool_.Exec("SELECT DISTINCT gpu_type FROM workers "
                              // Types registered before session 29 were not checked; one of
                              // 200 kB made every "no worker pool serves" error too large.
                              "WHERE gpu_type ~ '^[A-Za-z0-9._-]{1,64}$' ORDER BY gpu_type"));
  std::vector<std::string> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(r.Get(i, "gpu_type"));
  return out;
}

absl::StatusOr<std::vector<WorkerRow>> PgStore::ListWorkers(double alive_window_s) {
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec("SELECT w.worker_id, w.hostname, w.gpu_type, w.slots, "
                 "  " KFORGE_PG_RFC3339("w.last_heartbeat") " AS last_heartbeat, "
                 "  (w.last_heartbeat > now() - make_interval(secs => $1::float8)) AS alive, "
                 "  (SELECT count(*) FROM leases l WHERE l.worker_id = w.worker_id) AS leases, "
                 "  " KFORGE_WORKER_DRAIN_COLUMNS
                 "FROM workers w WHERE w.state <> 'gone' ORDER BY w.gpu_type, w.hostname",
                 {std::to_string(alive_window_s)}));
  std::vector<WorkerRow> out;
  for (int i = 0; i < r.rows(); ++i) {
    WorkerRow w;
    w.worker_id = r.Get(i, "worker_id");
    w.hostname = r.Get(i, "hostname");
    w.gpu_type = r.Get(i, "gpu_type");
    w.slots = static_cast<int>(r.GetInt(i, "slots"));
    w.last_heartbeat = r.Get(i, "last_heartbeat");
    w.alive = r.Get(i, "alive") == "t";
    w.leases_held = static_cast<int>(r.GetInt(i, "leases"));
    ReadDrain(r, i, &w);
    out.push_back(std::move(w));
  }
  return out;
}

absl::StatusOr<DrainChange> PgStore::SetDrained(const std::string& worker_id, bool drained,
                                                const std::string& principal) {
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec("WITH old AS (SELECT worker_id, drained_at IS NOT NULL AS was FROM workers "
                 "  WHERE worker_id::text = $1 AND state <> 'gone' FOR UPDATE) "
                 "UPDATE workers w SET "
                 "  drained_at = CASE WHEN $2::bool THEN coalesce(w.drained_at, now()) END, "
                 "  drained_by = CASE WHEN $2::bool THEN coalesce(w.drained_by, $3) END "
                 "FROM old WHERE w.worker_id = old.worker_id "
                 "RETURNING old.was, w.worker_id, w.hostname, w.gpu_type, w.slots, "
                 "  " KFORGE_PG_RFC3339("w.last_heartbeat") " AS last_heartbeat, "
                 "  (SELECT count(*) FROM leases l WHERE l.worker_id = w.worker_id) AS leases, "
                 "  " KFORGE_WORKER_DRAIN_COLUMNS,
                 {worker_id, drained ? "true" : "false", principal}));
  if (r.rows() == 0) {
    return absl::NotFoundError("no worker " + worker_id + " (unknown, or gone)");
  }
  DrainChange out;
  out.was_drained = r.Get(0, "was") == "t";
  out.worker.worker_id = r.Get(0, "worker_id");
  out.worker.hostname = r.Get(0, "hostname");
  out.worker.gpu_type = r.Get(0, "gpu_type");
  out.worker.slots = static_cast<int>(r.GetInt(0, "slots"));
  out.worker.last_heartbeat = r.Get(0, "last_heartbeat");
  out.worker.leases_held = static_cast<int>(r.GetInt(0, "leases"));
  ReadDrain(r, 0, &out.worker);
  return out;
}

}  // namespace kforge
