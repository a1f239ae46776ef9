// TokenStore (auth.h) over PostgreSQL's api_tokens table (migration 0005).
//
// Thread-safe: each call takes a pooled connection.
#ifndef KFORGE_COORDINATOR_PG_TOKEN_STORE_H_
#define KFORGE_COORDINATOR_PG_TOKEN_STORE_H_

#include "common/pg.h"
#include "coordinator/auth.h"

namespace kforge {

class PgTokenStore final : public TokenStore {
 public:
  explicit PgTokenStore(PgPool& pool) : pool_(pool) {}

  absl::StatusOr<std::optional<TokenRecord>> FindByHash(const std::string& hash) override;
  absl::StatusOr<TokenRecord> Create(const std::string& hash, const std::string& principal,
                                     const std::string& tenant,
                                     const std::vector<std::string>& roles, double ttl_s,
                                     const std::string& created_by) override;
  absl::StatusOr<bool> Revoke(const std::string& token_id) override;
  absl::StatusOr<std::vector<TokenRecord>> List() override;

 private:
  PgPool& pool_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_PG_TOKEN_STORE_H_
