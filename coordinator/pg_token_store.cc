#include "coordinator/pg_token_store.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace kforge {
namespace {

constexpr char kColumns[] =
    " token_id::text AS id, principal, tenant, array_to_string(roles, ',') AS roles, "
    "  created_by, " KFORGE_PG_RFC3339("created_at") " AS created, "
    "  coalesce(" KFORGE_PG_RFC3339("expires_at") ", '') AS expires, "
    "  coalesce(" KFORGE_PG_RFC3339("revoked_at") ", '') AS revoked_at, "
    "  (expires_at IS NOT NULL AND expires_at <= now()) AS expired, "
    "  (revoked_at IS NOT NULL) AS revoked ";

TokenRecord Parse(const PgResult& r, int i) {
  TokenRecord t;
  t.token_id = r.Get(i, "id");
  t.principal = r.Get(i, "principal");
  t.tenant = r.Get(i, "tenant");
  t.roles = absl::StrSplit(r.Get(i, "roles"), ',', absl::SkipEmpty());
  t.created_by = r.Get(i, "created_by");
  t.created_at = r.Get(i, "created");
  t.expires_at = r.Get(i, "expires");
  t.revoked_at = r.Get(i, "revoked_at");
  t.expired = r.Get(i, "expired") == "t";
  t.revoked = r.Get(i, "revoked") == "t";
  return t;
}

}  // namespace

absl::StatusOr<std::optional<TokenRecord>> PgTokenStore::FindByHash(const std::string& hash) {
  ASSIGN_OR_RETURN(PgResult r, pool_.ExecPrepared(absl::StrCat("SELECT", kColumns,
                                                               "FROM api_tokens "
                                                               "WHERE token_hash = $1"),
                                                  {hash}));
  if (r.rows() == 0) return std::nullopt;
  return Parse(r, 0);
}

absl::StatusOr<TokenRecord> PgTokenStore::Create(const std::string& hash,
                                                 const std::string& principal,
                                                 const std::string& tenant,
                                                 const std::vector<std::string>& roles,
                                                 double ttl_s, const std::string& created_by) {
  std::optional<std::string> ttl;
  if (ttl_s > 0) ttl = std::to_string(ttl_s);
  ASSIGN_OR_RETURN(
      PgResult r,
      pool_.Exec(absl::StrCat("INSERT INTO api_tokens (token_hash, principal, tenant, roles, "
                              "  created_by, expires_at) "
                              "VALUES ($1, $2, $3, $4::text[], $5, "
                              "  now() + make_interval(secs => $6::float8)) RETURNING",
                              kColumns),
                 {hash, principal, tenant, PgTextArray(roles), created_by, ttl}));
  return Parse(r, 0);
}

absl::StatusOr<bool> PgTokenStore::Revoke(const std::string& token_id) {
  ASSIGN_OR_RETURN(PgResult r, pool_.Exec("UPDATE api_tokens SET revoked_at = now() "
                                          "WHERE token_id = $1::uuid AND revoked_at IS NULL",
                                          {token_id}));
  return r.affected() == 1;
}

absl::StatusOr<std::vector<TokenRecord>> PgTokenStore::List() {
  ASSIGN_OR_RETURN(PgResult r, pool_.Exec(absl::StrCat("SELECT", kColumns,
                                                       "FROM api_tokens ORDER BY created_at")));
  std::vector<TokenRecord> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(Parse(r, i));
  return out;
}

}  // namespace kforge
