// kforge token create|revoke|list: API tokens through kforge.v1.AdminService (admin role);
// kforge audit: the audit trail (operator or admin).
#include <cstdio>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "cli/cli_common.h"
#include "kforge/v1/admin.grpc.pb.h"

ABSL_FLAG(std::string, principal, "", "token create: who the token speaks for");
ABSL_FLAG(std::string, tenant, "", "token create: the principal's tenant (default: default)");
ABSL_FLAG(std::string, roles, "",
          "token create: comma-separated roles (researcher, trainer, operator, admin, worker)");
ABSL_FLAG(double, ttl_s, 0, "token create: lifetime in seconds (0: until revoked)");
ABSL_FLAG(std::string, action, "", "audit: only this action (submit_job, cancel_job, ...)");
ABSL_DECLARE_FLAG(int, limit);

namespace kforge::cli {
namespace {

std::unique_ptr<v1::AdminService::Stub> AdminStub() {
  return v1::AdminService::NewStub(CoordinatorChannel());
}

void PrintInfo(const v1::TokenInfo& t) {
  std::string roles;
  for (const std::string& r : t.roles()) roles += (roles.empty() ? "" : ",") + r;
  std::printf("%-36s %-20s %-12s %-28s %-24s %s\n", t.token_id().c_str(), t.principal().c_str(),
              t.tenant().c_str(), roles.c_str(), t.created_at().c_str(),
              !t.revoked_at().empty()   ? ("revoked " + t.revoked_at()).c_str()
              : !t.expires_at().empty() ? ("expires " + t.expires_at()).c_str()
                                        : "valid");
}

int Create() {
  v1::CreateTokenRequest req;
  req.set_principal(absl::GetFlag(FLAGS_principal));
  req.set_tenant(absl::GetFlag(FLAGS_tenant));
  for (const std::string& r : SplitList(absl::GetFlag(FLAGS_roles))) req.add_roles(r);
  req.set_ttl_s(absl::GetFlag(FLAGS_ttl_s));
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::CreateTokenResponse resp;
  grpc::Status s = AdminStub()->CreateToken(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  // The secret alone on stdout, so that `kforge token create ... > file` keeps it; the id on
  // stderr.
  std::fprintf(stderr, "token %s for %s (tenant %s); the secret is shown only now\n",
               resp.info().token_id().c_str(), resp.info().principal().c_str(),
               resp.info().tenant().c_str());
  std::printf("%s\n", resp.token().c_str());
  return 0;
}

int Revoke(const std::string& id) {
  v1::RevokeTokenRequest req;
  req.set_token_id(id);
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::RevokeTokenResponse resp;
  grpc::Status s = AdminStub()->RevokeToken(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  std::printf("revoked %s\n", id.c_str());
  return 0;
}

int List() {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::ListTokensResponse resp;
  grpc::Status s = AdminStub()->ListTokens(&ctx, v1::ListTokensRequest(), &resp);
  if (!s.ok()) return Fail(s);
  for (const v1::TokenInfo& t : resp.tokens()) PrintInfo(t);
  return 0;
}

}  // namespace

int AuditCommand() {
  v1::QueryAuditRequest req;
  req.set_principal(absl::GetFlag(FLAGS_principal));
  req.set_action(absl::GetFlag(FLAGS_action));
  if (!NotNegative("limit", absl::GetFlag(FLAGS_limit))) return kExitUsage;
  req.set_limit(static_cast<uint32_t>(absl::GetFlag(FLAGS_limit)));
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::QueryAuditResponse resp;
  grpc::Status s = AdminStub()->QueryAudit(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  std::printf("%-24s %-20s %-10s %-16s %-36s %s\n", "AT", "PRINCIPAL", "TENANT", "ACTION",
              "TARGET", "DETAIL");
  for (const v1::AuditRecord& r : resp.records()) {
    std::printf("%-24s %-20s %-10s %-16s %-36s %s\n", r.at().c_str(), r.principal().c_str(),
                r.tenant().c_str(), r.action().c_str(), r.target().c_str(),
                r.detail_json().c_str());
  }
  return 0;
}

int TokenCommand(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "create") return Create();
  if (args.size() == 2 && args[0] == "revoke") return Revoke(args[1]);
  if (args.size() == 1 && args[0] == "list") return List();
  std::fprintf(stderr, "kforge token create --principal NAME --roles R[,R] | revoke ID | list\n");
  return kExitUsage;
}

}  // namespace kforge::cli
