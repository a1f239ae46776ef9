// AuditLog (audit.h) over PostgreSQL's audit_log table (migration 0006).
//
// Thread-safe: each call takes a pooled connection.
#ifndef KFORGE_COORDINATOR_PG_AUDIT_LOG_H_
#define KFORGE_COORDINATOR_PG_AUDIT_LOG_H_

#include "common/pg.h"
#include "coordinator/audit.h"

namespace kforge {

class PgAuditLog final : public AuditLog {
 public:
  explicit PgAuditLog(PgPool& pool) : pool_(pool) {}
  absl::Status Append(const AuditEntry& entry) override;
  absl::StatusOr<std::vector<AuditEntry>> Query(const AuditQuery& query) override;

 private:
  PgPool& pool_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_PG_AUDIT_LOG_H_
