#include "coordinator/auth.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/sha256.h"

namespace kforge {
namespace {

constexpr char kTokenPrefix[] = "kf_";
constexpr size_t kTokenHexDigits = 64;

constexpr std::pair<Role, const char*> kRoles[] = {{Role::kResearcher, "researcher"},
                                                   {Role::kTrainer, "trainer"},
                                                   {Role::kOperator, "operator"},
                                                   {Role::kAdmin, "admin"},
                                                   {Role::kWorker, "worker"}};

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '@' ||
         c == '-';
}

bool IsName(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

std::string RoleList(const Principal& p) {
  std::vector<std::string> names;
  for (Role r : p.roles) names.push_back(RoleName(r));
  return absl::StrJoin(names, ", ");
}

}  // namespace

const char* RoleName(Role role) {
  for (const auto& [r, name] : kRoles) {
    if (r == role) return name;
  }
  return "?";
}

std::optional<Role> RoleFromName(absl::string_view name) {
  for (const auto& [r, n] : kRoles) {
    if (name == n) return r;
  }
  return std::nullopt;
}

std::string HashToken(absl::string_view token) {
  return Sha256Hex(std::string_view(token.data(), token.size()));
}

namespace {

bool IsWellFormedToken(absl::string_view token) {
  if (!absl::StartsWith(token, kTokenPrefix) ||
      token.size() != sizeof(kTokenPrefix) - 1 + kTokenHexDigits) {
    return false;
  }
  for (char c : token.substr(sizeof(kTokenPrefix) - 1)) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

absl::Status EnsureBootstrapToken(TokenStore& store, absl::string_view token,
                                  const BootstrapIdentity& who) {
  if (!IsWellFormedToken(token)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", who.principal, " token must be kf_ and 64 hex digits (make one with: echo "
        "kf_$(openssl rand -hex 32))"));
  }
  const std::string hash = HashToken(token);
  auto found = store.FindByHash(hash);
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    auto created = store.Create(hash, who.principal, "default", {RoleName(who.role)}, 0,
                                "bootstrap");
    if (created.ok()) return absl::OkStatus();
    // Another coordinator starting at the same time may have stored it first (the hash is
    // unique): then it is found now.
    found = store.FindByHash(hash);
    if (!found.ok()) return found.status();
    if (!found->has_value()) return created.status();
  }
  const TokenRecord& r = **found;
  if (std::find(r.roles.begin(), r.roles.end(), RoleName(who.role)) == r.roles.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "this token is stored already as token ", r.token_id, " of ", r.principal,
        ", without the ", RoleName(who.role), " role: give ", who.principal,
        " a token of its own"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Principal> Authenticator::Authenticate(absl::string_view authorization) const {
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "no credentials: send an API token as 'authorization: Bearer <token>' (kforge "
        "--token_file, KFORGE_TOKEN)");
  }
  constexpr absl::string_view kBearer = "Bearer ";
  if (!absl::StartsWith(authorization, kBearer)) {
    return absl::UnauthenticatedError("the authorization metadata must be 'Bearer <token>'");
  }
  absl::string_view token = absl::StripAsciiWhitespace(authorization.substr(kBearer.size()));
  if (!IsWellFormedToken(token)) {
    return absl::UnauthenticatedError("malformed API token: kforge tokens are kf_ and 64 hex "
                                      "digits");
  }
  auto record = store_.FindByHash(HashToken(token));
  if (!record.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot check the token now: ", record.status().message()));
  }
  if (!record->has_value()) return absl::UnauthenticatedError("unknown API token");
  const TokenRecord& r = **record;
  if (r.revoked) {
    return absl::UnauthenticatedError(
        absl::StrCat("API token ", r.token_id, " was revoked at ", r.revoked_at));
  }
  if (r.expired) {
    return absl::UnauthenticatedError(
        absl::StrCat("API token ", r.token_id, " expired at ", r.expires_at));
  }
  Principal p;
  p.token_id = r.token_id;
  p.name = r.principal;
  p.tenant = r.tenant;
  for (const std::string& role : r.roles) {
    if (auto known = RoleFromName(role)) p.roles.insert(*known);
  }
  return p;
}

std::vector<std::string> ReadableTenants(const Principal& p) {
  if (p.Has(Role::kOperator)) return {};
  if (p.tenant == kPublicTenant) return {kPublicTenant};
  return {p.tenant, kPublicTenant};
}

bool CanRead(const Principal& p, const std::string& tenant) {
  if (p.Has(Role::kOperator)) return true;
  return !tenant.empty() && (tenant == p.tenant || tenant == kPublicTenant);
}

absl::Status Require(const Principal& p, std::initializer_list<Role> any_of,
                     absl::string_view action) {
  for (Role r : any_of) {
    if (p.Has(r)) return absl::OkStatus();
  }
  std::vector<std::string> needed;
  for (Role r : any_of) needed.push_back(RoleName(r));
  return absl::PermissionDeniedError(absl::StrCat(
      p.name, " (roles: ", RoleList(p), ") may not ", action, ": it needs the ",
      absl::StrJoin(needed, " or "), " role"));
}

absl::Status ValidateTokenRequest(const std::string& principal, const std::string& tenant,
                                  const std::vector<std::string>& roles, double ttl_s) {
  if (!IsName(principal) || !IsName(tenant)) {
    return absl::InvalidArgumentError(
        "principal and tenant must be 1..128 characters of letters, digits and _ . @ -");
  }
  if (roles.empty()) return absl::InvalidArgumentError("a token needs at least one role");
  for (const std::string& r : roles) {
    if (!RoleFromName(r)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown role '", IsName(r) ? r : "?",
          "': roles are researcher, trainer, operator, admin, worker"));
    }
  }
  if (!(ttl_s >= 0 && std::isfinite(ttl_s))) {
    return absl::InvalidArgumentError("ttl_s must be finite and not negative (0: no expiry)");
  }
  return absl::OkStatus();
}

}  // namespace kforge
