#include "coordinator/auth.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

// An in-memory TokenStore; expiry and revocation are set by the test.
class MemTokenStore final : public TokenStore {
 public:
  absl::StatusOr<std::optional<TokenRecord>> FindByHash(const std::string& hash) override {
    auto it = by_hash_.find(hash);
    if (it == by_hash_.end()) return std::nullopt;
    return it->second;
  }
  absl::StatusOr<TokenRecord> Create(const std::string& hash, const std::string& principal,
                                     const std::string& tenant,
                                     const std::vector<std::string>& roles, double,
                                     const std::string& created_by) override {
    TokenRecord r;
    r.token_id = absl::StrCat("id-", by_hash_.size() + 1);
    r.principal = principal;
    r.tenant = tenant;
    r.roles = roles;
    r.created_by = created_by;
    by_hash_[hash] = r;
    return r;
  }
  absl::StatusOr<bool> Revoke(const std::string& token_id) override {
    for (auto& [hash, r] : by_hash_) {
      if (r.token_id == token_id && !r.revoked) {
        r.revoked = true;
        r.revoked_at = "2026-12-01T00:00:00.000Z";
        return true;
      }
    }
    return false;
  }
  absl::StatusOr<std::vector<TokenRecord>> List() override {
    std::vector<TokenRecord> out;
    for (const auto& [hash, r] : by_hash_) out.push_back(r);
    return out;
  }
  std::map<std::string, TokenRecord> by_hash_;
};

std::string Issue(MemTokenStore& store, const std::string& who, std::vector<std::string> roles) {
  std::string token = *NewToken();
  (void)store.Create(HashToken(token), who, "lab", roles, 0, "test");
  return token;
}

TEST(AuthTest, TokensAreRandomAndOnlyTheirHashIsStored) {
  MemTokenStore store;
  std::string a = Issue(store, "alice", {"researcher"});
  std::string b = Issue(store, "bob", {"researcher"});
  EXPECT_NE(a, b);
  EXPECT_EQ(a.size(), 67u);
  EXPECT_EQ(store.by_hash_.count(a), 0u);
  EXPECT_EQ(store.by_hash_.count(HashToken(a)), 1u);
}

TEST(AuthTest, AValidTokenNamesItsPrincipalTenantAndRoles) {
  MemTokenStore store;
  Authenticator auth(store);
  std::string t = Issue(store, "alice", {"researcher", "operator"});
  auto p = auth.Authenticate("Bearer " + t);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "alice");
  EXPECT_EQ(p->tenant, "lab");
  EXPECT_TRUE(p->Has(Role::kOperator));
  EXPECT_FALSE(p->Has(Role::kAdmin));
}

TEST(AuthTest, MissingMalformedUnknownRevokedAndExpiredTokensAreUnauthenticated) {
  MemTokenStore store;
  Authenticator auth(store);
  EXPECT_EQ(auth.Authenticate("").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Authenticate("Basic xyz").status().message(),
            "the authorization metadata must be 'Bearer <token>'");
  EXPECT_EQ(auth.Authenticate("Bearer kf_123").status().message(),
            "malformed API token: kforge tokens are kf_ and 64 hex digits");
  EXPECT_EQ(auth.Authenticate("Bearer " + *NewToken()).status(),
            absl::UnauthenticatedError("unknown API token"));
  std::string t = Issue(store, "alice", {"researcher"});
  ASSERT_TRUE(*store.Revoke("id-1"));
  EXPECT_EQ(auth.Authenticate("Bearer " + t).status(),
            absl::UnauthenticatedError("API token id-1 was revoked at 2026-12-01T00:00:00.000Z"));
  std::string old = Issue(store, "carol", {"trainer"});
  store.by_hash_[HashToken(old)].expired = true;
  store.by_hash_[HashToken(old)].expires_at = "2026-11-30T00:00:00.000Z";
  EXPECT_EQ(auth.Authenticate("Bearer " + old).status().message(),
            "API token id-2 expired at 2026-11-30T00:00:00.000Z");
}

TEST(AuthTest, RolesDecideWhatAPrincipalMayDo) {
  Principal trainer{"id-1", "rl-trainer", "lab", {Role::kTrainer}};
  EXPECT_TRUE(Require(trainer, {Role::kResearcher, Role::kTrainer}, "evaluate batches").ok());
  EXPECT_EQ(Require(trainer, {Role::kResearcher}, "submit jobs"),
            absl::PermissionDeniedError(
                "rl-trainer (roles: trainer) may not submit jobs: it needs the researcher role"));
}

TEST(AuthTest, TokenRequestsAreValidated) {
  EXPECT_TRUE(ValidateTokenRequest("alice", "lab", {"researcher"}, 3600).ok());
  EXPECT_EQ(ValidateTokenRequest("alice", "lab", {"root"}, 0).message(),
            "unknown role 'root': roles are researcher, trainer, operator, admin, worker");
  EXPECT_EQ(ValidateTokenRequest("a b", "lab", {"admin"}, 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateTokenRequest("alice", "lab", {}, 0).message(),
            "a token needs at least one role");
  EXPECT_EQ(ValidateTokenRequest("alice", "lab", {"admin"}, -1).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AuthTest, TheBootstrapTokenIsStoredOnceAsAnAdmin) {
  MemTokenStore store;
  std::string t = *NewToken();
  ASSERT_TRUE(EnsureBootstrapToken(store, t, kBootstrapAdmin).ok());
  ASSERT_TRUE(EnsureBootstrapToken(store, t, kBootstrapAdmin).ok());
  EXPECT_EQ(store.by_hash_.size(), 1u);
  auto p = Authenticator(store).Authenticate("Bearer " + t);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->name, "bootstrap-admin");
  EXPECT_TRUE(p->Has(Role::kAdmin));
  EXPECT_EQ(EnsureBootstrapToken(store, "secret", kBootstrapAdmin).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AuthTest, TheBootstrapWorkerTokenIsAWorkerOnlyAndNeverAnotherIdentitysToken) {
  MemTokenStore store;
  std::string admin = *NewToken(), worker = *NewToken();
  ASSERT_TRUE(EnsureBootstrapToken(store, admin, kBootstrapAdmin).ok());
  ASSERT_TRUE(EnsureBootstrapToken(store, worker, kBootstrapWorker).ok());
  ASSERT_TRUE(EnsureBootstrapToken(store, worker, kBootstrapWorker).ok());  // a restart
  EXPECT_EQ(store.by_hash_.size(), 2u);
  auto p = Authenticator(store).Authenticate("Bearer " + worker);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->name, "bootstrap-worker");
  EXPECT_EQ(p->roles, std::set<Role>{Role::kWorker});
  EXPECT_EQ(p->tenant, "default");
  // The admin's token given as the workers' (or the other way round) is refused, not shared.
  absl::Status s = EnsureBootstrapToken(store, admin, kBootstrapWorker);
  EXPECT_EQ(s, absl::FailedPreconditionError(
                   "this token is stored already as token id-1 of bootstrap-admin, without the "
                   "worker role: give bootstrap-worker a token of its own"));
  EXPECT_EQ(EnsureBootstrapToken(store, worker, kBootstrapAdmin).code(),
            absl::StatusCode::kFailedPrecondition);
  // A worker token an admin made (kforge token create --roles=worker) is accepted as it is.
  std::string made = *NewToken();
  ASSERT_TRUE(store.Create(HashToken(made), "workers", "default", {"worker"}, 0, "alice").ok());
  EXPECT_TRUE(EnsureBootstrapToken(store, made, kBootstrapWorker).ok());
  EXPECT_EQ(store.by_hash_.size(), 3u);
  // Revoked stays revoked across restarts.
  ASSERT_TRUE(*store.Revoke(p->token_id));
  EXPECT_TRUE(EnsureBootstrapToken(store, worker, kBootstrapWorker).ok());
  EXPECT_EQ(Authenticator(store).Authenticate("Bearer " + worker).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(EnsureBootstrapToken(store, "kf_00", kBootstrapWorker).message(),
            "the bootstrap-worker token must be kf_ and 64 hex digits (make one with: echo "
            "kf_$(openssl rand -hex 32))");
}

// Two coordinators starting at once: the second's insert fails on the unique hash, and it
// finds the token the first stored.
TEST(AuthTest, ABootstrapTokenStoredConcurrentlyIsFoundAfterTheInsertFails) {
  class RacingStore final : public TokenStore {
   public:
    absl::StatusOr<std::optional<TokenRecord>> FindByHash(const std::string&) override {
      if (finds_++ == 0) return std::nullopt;  // not yet, when first asked
      TokenRecord r;
      r.token_id = "id-other";
      r.principal = "bootstrap-worker";
      r.roles = {"worker"};
      return r;
    }
    absl::StatusOr<TokenRecord> Create(const std::string&, const std::string&,
                                       const std::string&, const std::vector<std::string>&,
                                       double, const std::string&) override {
      return absl::AlreadyExistsError("duplicate key value violates unique constraint");
    }
    absl::StatusOr<bool> Revoke(const std::string&) override { return false; }
    absl::StatusOr<std::vector<TokenRecord>> List() override {
      return std::vector<TokenRecord>{};
    }
    int finds_ = 0;
  } store;
  EXPECT_TRUE(EnsureBootstrapToken(store, *NewToken(), kBootstrapWorker).ok());
  EXPECT_EQ(store.finds_, 2);
}

}  // namespace
}  // namespace kforge
