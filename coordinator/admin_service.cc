#include "coordinator/admin_service.h"

#include "common/base/log.h"
#include "common/service.h"
#include "coordinator/task_validation.h"

namespace kforge {
namespace {

void ToInfo(const TokenRecord& t, v1::TokenInfo* out) {
  out->set_token_id(t.token_id);
  out->set_principal(t.principal);
  out->set_tenant(t.tenant);
  for (const std::string& r : t.roles) out->add_roles(r);
  out->set_created_by(t.created_by);
  out->set_created_at(t.created_at);
  out->set_expires_at(t.expires_at);
  out->set_revoked_at(t.revoked_at);
}

}  // namespace

grpc::Status AdminServiceImpl::CreateToken(grpc::ServerContext* ctx,
                                           const v1::CreateTokenRequest* req,
                                           v1::CreateTokenResponse* resp) {
  auto admin = auth_.Check(*ctx, {Role::kAdmin}, "create tokens");
  if (!admin.ok()) return ToGrpcStatus(admin.status());
  const std::string tenant = req->tenant().empty() ? "default" : req->tenant();
  std::vector<std::string> roles(req->roles().begin(), req->roles().end());
  if (absl::Status s = ValidateTokenRequest(req->principal(), tenant, roles, req->ttl_s());
      !s.ok()) {
    return ToGrpcStatus(s);
  }
  auto token = NewToken();
  if (!token.ok()) return ToGrpcStatus(token.status());
  auto record =
      tokens_.Create(HashToken(*token), req->principal(), tenant, roles, req->ttl_s(), admin->name);
  if (!record.ok()) return ToGrpcStatus(record.status());
  resp->set_token(*token);
  ToInfo(*record, resp->mutable_info());
  Audit(audit_, *admin, "create_token", record->token_id,
        {{"principal", record->principal}, {"tenant", record->tenant}, {"roles", record->roles}});
  LogInfo("token created", {{"token_id", record->token_id},
                            {"principal", record->principal},
                            {"tenant", record->tenant},
                            {"by", admin->name}});
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::RevokeToken(grpc::ServerContext* ctx,
                                           const v1::RevokeTokenRequest* req,
                                           v1::RevokeTokenResponse*) {
  auto admin = auth_.Check(*ctx, {Role::kAdmin}, "revoke tokens");
  if (!admin.ok()) return ToGrpcStatus(admin.status());
  if (absl::Status s = ValidateUuid(req->token_id(), "token_id"); !s.ok()) return ToGrpcStatus(s);
  auto revoked = tokens_.Revoke(req->token_id());
  if (!revoked.ok()) return ToGrpcStatus(revoked.status());
  if (!*revoked) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "no valid token " + req->token_id() + " (unknown or already revoked)");
  }
  Audit(audit_, *admin, "revoke_token", req->token_id());
  LogInfo("token revoked", {{"token_id", req->token_id()}, {"by", admin->name}});
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::ListTokens(grpc::ServerContext* ctx, const v1::ListTokensRequest*,
                                          v1::ListTokensResponse* resp) {
  auto admin = auth_.Check(*ctx, {Role::kAdmin}, "list tokens");
  if (!admin.ok()) return ToGrpcStatus(admin.status());
  auto all = tokens_.List();
  if (!all.ok()) return ToGrpcStatus(all.status());
  for (const TokenRecord& t : *all) ToInfo(t, resp->add_tokens());
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::QueryAudit(grpc::ServerContext* ctx,
                                          const v1::QueryAuditRequest* req,
                                          v1::QueryAuditResponse* resp) {
  auto caller = auth_.Check(*ctx, {Role::kOperator, Role::kAdmin}, "read the audit trail");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (audit_ == nullptr) return {grpc::StatusCode::UNIMPLEMENTED, "no audit trail here"};
  AuditQuery q;
  q.principal = req->principal();
  q.action = req->action();
  q.limit = req->limit() == 0 ? 100 : static_cast<int>(std::min<uint32_t>(req->limit(), 10000));
  auto rows = audit_->Query(q);
  if (!rows.ok()) return ToGrpcStatus(rows.status());
  for (const AuditEntry& e : *rows) {
    v1::AuditRecord* r = resp->add_records();
    r->set_audit_id(e.audit_id);
    r->set_at(e.at);
    r->set_principal(e.principal);
    r->set_tenant(e.tenant);
    r->set_action(e.action);
    r->set_target(e.target);
    r->set_detail_json(e.detail_json);
  }
  return grpc::Status::OK;
}

}  // namespace kforge
