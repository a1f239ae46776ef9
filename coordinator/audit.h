// The audit trail (docs/security.md, "Audit"): who submitted, cancelled, registered, cut off,
// created or revoked what, and when, in an append-only table (migration 0006) that operators
// query (AdminService.QueryAudit, `kforge audit`).
//
// Recording is best effort after the action: an entry that cannot be stored is logged as an
// error with everything it would have held, and the action stands.
//
// Thread-safe: AuditLog implementations must be.
#ifndef KFORGE_COORDINATOR_AUDIT_H_
#define KFORGE_COORDINATOR_AUDIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/auth.h"
#include "nlohmann/json.hpp"

namespace kforge {

struct AuditEntry {
  int64_t audit_id = 0;
  std::string at;  // RFC 3339, set by the store
  std::string principal, tenant, action, target;
  std::string detail_json = "{}";
};

struct AuditQuery {
  std::string principal, action;  // empty: any
  int limit = 100;
};

class AuditLog {
 public:
  virtual ~AuditLog() = default;
  virtual absl::Status Append(const AuditEntry& entry) = 0;
  // Newest first.
  virtual absl::StatusOr<std::vector<AuditEntry>> Query(const AuditQuery& query) = 0;
};

// Appends `action` on `target` by `who`; logs (and otherwise ignores) a failure. `log` may be
// null (no audit trail).
void Audit(AuditLog* log, const Principal& who, const std::string& action,
           const std::string& target, const nlohmann::json& detail = nlohmann::json::object());

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_AUDIT_H_
