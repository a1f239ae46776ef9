#include "coordinator/pg_audit_log.h"

#include "common/status_macros.h"

namespace kforge {

absl::Status PgAuditLog::Append(const AuditEntry& e) {
  return pool_
      .ExecPrepared("INSERT INTO audit_log (principal, tenant, action, target, detail) "
                    "VALUES ($1, $2, $3, $4, $5::jsonb)",
                    {e.principal, e.tenant, e.action, e.target, e.detail_json})
      .status();
}

absl::StatusOr<std::vector<AuditEntry>> PgAuditLog::Query(const AuditQuery& q) {
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec("SELECT audit_id, " KFORGE_PG_RFC3339("at") " AS at, principal, tenant, "
                 "  action, target, detail::text AS detail FROM audit_log "
                 "WHERE ($1 = '' OR principal = $1) AND ($2 = '' OR action = $2) "
                 "ORDER BY at DESC, audit_id DESC LIMIT $3",
                 {q.principal, q.action, std::to_string(q.limit)}));
  std::vector<AuditEntry> out;
  for (int i = 0; i < r.rows(); ++i) {
    AuditEntry e;
    e.audit_id = r.GetInt(i, "audit_id");
    e.at = r.Get(i, "at");
    e.principal = r.Get(i, "principal");
    e.tenant = r.Get(i, "tenant");
    e.action = r.Get(i, "action");
    e.target = r.Get(i, "target");
    e.detail_json = r.Get(i, "detail");
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace kforge
