#include "llm_gateway/pg_call_log.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace kforge::gateway {

absl::StatusOr<std::vector<int64_t>> PgCallLog::Insert(const std::string& job_id,
                                                       const std::vector<AttemptRecord>& records) {
  ASSIGN_OR_RETURN(PgPool::Lease conn, pool_.Acquire());
  RETURN_IF_ERROR(conn->Exec("BEGIN").status());
  std::vector<int64_t> ids;
  for (const AttemptRecord& r : records) {
    auto row = conn->Exec(
        "INSERT INTO llm_calls (job_id, provider, model, tokens_in, tokens_out, latency_ms, "
        "cost_usd, status, error, created_at) "
        "VALUES ($1::uuid, $2, $3, $4, $5, $6, $7, $8, $9, to_timestamp($10::double precision)) "
        "RETURNING call_id",
        {job_id.empty() ? std::nullopt : std::optional<std::string>(job_id), r.provider, r.model,
         std::to_string(r.tokens_in), std::to_string(r.tokens_out), absl::StrCat(r.latency_ms),
         absl::StrCat(r.cost_usd), r.status,
         r.error.empty() ? std::nullopt : std::optional<std::string>(r.error),
         absl::StrCat(absl::ToDoubleSeconds(r.started - absl::UnixEpoch()))});
    if (!row.ok()) {
      (void)conn->Exec("ROLLBACK");
      return row.status();
    }
    ids.push_back(row->GetInt(0, "call_id"));
  }
  RETURN_IF_ERROR(conn->Exec("COMMIT").status());
  return ids;
}

absl::Status PgCallLog::CheckJob(const std::string& job_id) {
  ASSIGN_OR_RETURN(PgResult rows,
                   pool_.Exec("SELECT 1 FROM jobs WHERE job_id = $1::uuid", {job_id}));
  if (rows.rows() == 0) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  return absl::OkStatus();
}

}  // namespace kforge::gateway
