// Who is calling, and may they: API tokens mapped to principals with roles (docs/security.md).
//
// A token is "kf_" followed by 64 hex digits (256 random bits); only its SHA-256 is stored,
// so a database dump reveals no usable token. A caller sends it as gRPC metadata
// `authorization: Bearer <token>`. Authenticate answers UNAUTHENTICATED (no token, unknown,
// revoked, expired: the message says which) and Require PERMISSION_DENIED (a known principal
// without a role the call needs: the message names both).
//
// Roles: researcher (tasks, jobs, batches, reading results), trainer (tasks and
// EvaluateBatch), operator (workers, cancelling anything, reading everything), admin (tokens),
// worker (registering and holding a worker stream).
//
// Thread-safe: Authenticator holds no mutable state; TokenStore implementations must be
// thread-safe.
#ifndef KFORGE_COORDINATOR_AUTH_H_
#define KFORGE_COORDINATOR_AUTH_H_

#include <optional>
#include <set>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/secrets.h"  // NewToken

namespace kforge {

enum class Role { kResearcher, kTrainer, kOperator, kAdmin, kWorker };

const char* RoleName(Role role);
std::optional<Role> RoleFromName(absl::string_view name);

struct Principal {
  std::string token_id;
  std::string name;
  std::string tenant;
  std::set<Role> roles;
  bool Has(Role role) const { return roles.count(role) > 0; }
};

// A stored token as the store reads it.
struct TokenRecord {
  std::string token_id, principal, tenant, created_by, created_at, expires_at, revoked_at;
  std::vector<std::string> roles;
  bool expired = false;  // expires_at is past (by the database's clock)
  bool revoked = false;
};

class TokenStore {
 public:
  virtual ~TokenStore() = default;
  // nullopt for an unknown hash.
  virtual absl::StatusOr<std::optional<TokenRecord>> FindByHash(const std::string& hash) = 0;
  // Stores a new token's hash; returns its record. `ttl_s` 0: never expires.
  virtual absl::StatusOr<TokenRecord> Create(const std::string& hash, const std::string& principal,
                                             const std::string& tenant,
                                             const std::vector<std::string>& roles, double ttl_s,
                                             const std::string& created_by) = 0;
  // False when no unrevoked token has that id.
  virtual absl::StatusOr<bool> Revoke(const std::string& token_id) = 0;
  virtual absl::StatusOr<std::vector<TokenRecord>> List() = 0;
};

// What is stored for a token: its SHA-256 in hex.
std::string HashToken(absl::string_view token);

class Authenticator {
 public:
  explicit Authenticator(TokenStore& store) : store_(store) {}

  // `authorization`: the metadata value ("Bearer kf_..."), empty when none was sent.
  absl::StatusOr<Principal> Authenticate(absl::string_view authorization) const;

 private:
  TokenStore& store_;
};

// PERMISSION_DENIED "<name> (roles: trainer) may not <action>: it needs the researcher role"
// unless `p` has one of `any_of`.
absl::Status Require(const Principal& p, std::initializer_list<Role> any_of,
                     absl::string_view action);

// The read rule (docs/security.md, "Tenants"): a principal reads the jobs, batches, results,
// sources and rollouts of its own tenant and of the shared tenant "public"; an operator reads
// every tenant's. Returns the tenants `p` may read; empty means all of them.
inline constexpr char kPublicTenant[] = "public";
std::vector<std::string> ReadableTenants(const Principal& p);
// True when `p` may read what `tenant` owns ("" is what no tenant owns: data from before
// identities, readable by operators only).
bool CanRead(const Principal& p, const std::string& tenant);

// The identities the coordinator's bootstrap token files give (docs/security.md):
// --bootstrap_admin_token_file makes the first admin, --bootstrap_worker_token_file the workers'
// token (the Helm chart generates both, so no token is made by hand after an install).
struct BootstrapIdentity {
  const char* principal;
  Role role;
};
inline constexpr BootstrapIdentity kBootstrapAdmin{"bootstrap-admin", Role::kAdmin};
inline constexpr BootstrapIdentity kBootstrapWorker{"bootstrap-worker", Role::kWorker};

// Makes `token` (read from a bootstrap token file) a valid token of `who` (tenant "default",
// no expiry) unless its hash is stored already (revoked or not: a revoked bootstrap token stays
// revoked). Several coordinators may start at once: one stores it, the others find it.
// INVALID_ARGUMENT for a malformed token; FAILED_PRECONDITION when the token is stored already
// without `who.role` (e.g. the admin token given as the workers').
absl::Status EnsureBootstrapToken(TokenStore& store, absl::string_view token,
                                  const BootstrapIdentity& who);

// Checks a token request of an admin: principal and tenant 1..128 characters of
// [A-Za-z0-9_.@-], at least one known role, ttl_s finite and not negative.
absl::Status ValidateTokenRequest(const std::string& principal, const std::string& tenant,
                                  const std::vector<std::string>& roles, double ttl_s);

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_AUTH_H_
