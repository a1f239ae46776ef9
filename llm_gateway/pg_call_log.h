// CallLog on PostgreSQL: rows of llm_calls (migrations/0001_init.sql).
//
// Thread-safety: thread-safe (each call leases its own pooled connection). The pool must
// outlive the log.
#ifndef KFORGE_LLM_GATEWAY_PG_CALL_LOG_H_
#define KFORGE_LLM_GATEWAY_PG_CALL_LOG_H_

#include "common/pg.h"
#include "llm_gateway/call_log.h"

namespace kforge::gateway {

class PgCallLog final : public CallLog {
 public:
  explicit PgCallLog(PgPool& pool) : pool_(pool) {}
  absl::StatusOr<std::vector<int64_t>> Insert(const std::string& job_id,
                                              const std::vector<AttemptRecord>& records) override;
  absl::Status CheckJob(const std::string& job_id) override;

 private:
  PgPool& pool_;
};

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_PG_CALL_LOG_H_
