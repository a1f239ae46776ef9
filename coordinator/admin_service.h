// gRPC adapter for kforge.v1.AdminService: API tokens, created (the secret returned once, its
// hash stored), revoked and listed by principals with the admin role, each change audited;
// and the audit trail, read by operators and admins.
//
// Thread-safety: called concurrently from gRPC's threads; the TokenStore is thread-safe.
#ifndef KFORGE_COORDINATOR_ADMIN_SERVICE_H_
#define KFORGE_COORDINATOR_ADMIN_SERVICE_H_

#include "coordinator/audit.h"
#include "coordinator/auth.h"
#include "coordinator/rpc_auth.h"
#include "kforge/v1/admin.grpc.pb.h"

namespace kforge {

class AdminServiceImpl final : public v1::AdminService::Service {
 public:
  // `audit` null: nothing is recorded and QueryAudit answers UNIMPLEMENTED.
  AdminServiceImpl(TokenStore& tokens, const RpcAuth& auth, AuditLog* audit)
      : tokens_(tokens), auth_(auth), audit_(audit) {}

  grpc::Status CreateToken(grpc::ServerContext* ctx, const v1::CreateTokenRequest* req,
                           v1::CreateTokenResponse* resp) override;
  grpc::Status RevokeToken(grpc::ServerContext* ctx, const v1::RevokeTokenRequest* req,
                           v1::RevokeTokenResponse* resp) override;
  grpc::Status ListTokens(grpc::ServerContext* ctx, const v1::ListTokensRequest* req,
                          v1::ListTokensResponse* resp) override;
  grpc::Status QueryAudit(grpc::ServerContext* ctx, const v1::QueryAuditRequest* req,
                          v1::QueryAuditResponse* resp) override;

 private:
  TokenStore& tokens_;
  const RpcAuth& auth_;
  AuditLog* const audit_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_ADMIN_SERVICE_H_
