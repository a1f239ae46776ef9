#include "coordinator/rpc_auth.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace kforge {

absl::StatusOr<Principal> RpcAuth::Identify(const grpc::ServerContext& ctx) const {
  if (authenticator_ == nullptr) {
    Principal anonymous;
    anonymous.name = "anonymous";
    anonymous.tenant = "default";
    anonymous.roles = {Role::kResearcher, Role::kTrainer, Role::kOperator, Role::kAdmin,
                       Role::kWorker};
    return anonymous;
  }
  absl::string_view header;
  auto it = ctx.client_metadata().find("authorization");
  if (it != ctx.client_metadata().end()) header = absl::string_view(it->second.data(), it->second.size());
  return authenticator_->Authenticate(header);
}

absl::StatusOr<Principal> RpcAuth::Check(const grpc::ServerContext& ctx,
                                         std::initializer_list<Role> any_of,
                                         absl::string_view action) const {
  absl::StatusOr<Principal> p = Identify(ctx);
  if (!p.ok()) return p;
  if (absl::Status s = Require(*p, any_of, action); !s.ok()) return s;
  return p;
}

absl::Status StreamCredentials::Recheck() {
  const absl::Time now = absl::Now();
  if (now - checked_at_ < interval_) return absl::OkStatus();
  checked_at_ = now;
  absl::StatusOr<Principal> p = auth_.Identify(ctx_);
  if (!p.ok() && absl::IsUnauthenticated(p.status())) {
    return absl::UnauthenticatedError(
        absl::StrCat("credentials no longer valid: ", p.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace kforge
