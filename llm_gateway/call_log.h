// Where the gateway's call records go: the llm_calls table. An interface so that the
// accounting logic does not depend on libpq; PgCallLog (pg_call_log.h) is the real one.
//
// Thread-safety: implementations are thread-safe.
#ifndef KFORGE_LLM_GATEWAY_CALL_LOG_H_
#define KFORGE_LLM_GATEWAY_CALL_LOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "llm_gateway/call_record.h"

namespace kforge::gateway {

class CallLog {
 public:
  virtual ~CallLog() = default;
  // Stores one row per record, with `job_id` ("" stores NULL). Returns the rows' call_ids in
  // the records' order.
  virtual absl::StatusOr<std::vector<int64_t>> Insert(
      const std::string& job_id, const std::vector<AttemptRecord>& records) = 0;
  // OK when the job exists; NOT_FOUND when it does not; INVALID_ARGUMENT when `job_id` is not
  // a UUID.
  virtual absl::Status CheckJob(const std::string& job_id) = 0;
};

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_CALL_LOG_H_
