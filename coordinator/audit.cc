#include "coordinator/audit.h"

#include "common/base/log.h"

namespace kforge {

void Audit(AuditLog* log, const Principal& who, const std::string& action,
           const std::string& target, const nlohmann::json& detail) {
  if (log == nullptr) return;
  AuditEntry e;
  e.principal = who.name;
  e.tenant = who.tenant;
  e.action = action;
  e.target = target;
  e.detail_json = detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (absl::Status s = log->Append(e); !s.ok()) {
    LogError("audit entry not stored", {{"principal", e.principal},
                                        {"action", e.action},
                                        {"target", e.target},
                                        {"detail", e.detail_json},
                                        {"error", std::string(s.message())}});
  }
}

}  // namespace kforge
