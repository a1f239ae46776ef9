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
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
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

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_RPC_AUTH_H_
