// The RPC edge of authentication: reads the caller's `authorization` metadata from a gRPC
// ServerContext and asks the Authenticator (auth.h) who it is and whether it may act.
//
// Without an Authenticator (the coordinator's --allow_unauthenticated, which logs a warning)
// every caller is the principal "anonymous" of tenant "default" with every role.
//
// Thread-safe.
#ifndef KFORGE_COORDINATOR_RPC_AUTH_H_
#define KFORGE_COORDINATOR_RPC_AUTH_H_

#include <initializer_list>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "coordinator/auth.h"
#include "grpcpp/server_context.h"

namespace kforge {

class RpcAuth {
 public:
  explicit RpcAuth(const Authenticator* authenticator) : authenticator_(authenticator) {}

  // The caller, if it has one of `any_of` (UNAUTHENTICATED, PERMISSION_DENIED otherwise).
  absl::StatusOr<Principal> Check(const grpc::ServerContext& ctx, std::initializer_list<Role> any_of,
                                  absl::string_view action) const;
  // The caller, whatever its roles.
  absl::StatusOr<Principal> Identify(const grpc::ServerContext& ctx) const;
  bool enabled() const { return authenticator_ != nullptr; }

 private:
  const Authenticator* const authenticator_;
};

// The credentials of a server stream that stays open (EvaluateBatch, WatchJob), checked again
// while it lasts: a token revoked or expired after the call began must not go on receiving
// results and events. Checks at most once per `interval` (each check reads the token store).
// Only UNAUTHENTICATED ends the stream: a token store that cannot be read now (UNAVAILABLE)
// is not a reason to cut a caller off. Used by the stream's one handler thread; `auth` and
// `ctx` outlive it.
class StreamCredentials {
 public:
  StreamCredentials(const RpcAuth& auth, const grpc::ServerContext& ctx,
                    absl::Duration interval = absl::Seconds(1))
      : auth_(auth), ctx_(ctx), interval_(interval), checked_at_(absl::Now()) {}

  // OK, or UNAUTHENTICATED "credentials no longer valid: <why>" once they are not.
  absl::Status Recheck();

 private:
  const RpcAuth& auth_;
  const grpc::ServerContext& ctx_;
  const absl::Duration interval_;
  absl::Time checked_at_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_RPC_AUTH_H_
