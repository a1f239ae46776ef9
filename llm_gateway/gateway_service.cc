#include "llm_gateway/gateway_service.h"

#include "common/secrets.h"
#include "common/service.h"

namespace kforge {
namespace {

template <typename Response>
grpc::Status Answer(absl::StatusOr<Response> result, Response* resp) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *resp = std::move(result).value();
  return grpc::Status::OK;
}

}  // namespace

grpc::Status GatewayServiceImpl::CheckCaller(const grpc::ServerContext& ctx) const {
  if (caller_header_.empty()) return grpc::Status::OK;
  auto it = ctx.client_metadata().find("authorization");
  const std::string sent =
      it == ctx.client_metadata().end() ? "" : std::string(it->second.data(), it->second.size());
  if (SecretsEqual(sent, caller_header_)) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      sent.empty() ? "the gateway serves coordinators only: no token sent "
                                     "(the coordinator's --gateway_token_file)"
                                   : "the gateway serves coordinators only: wrong token");
}

grpc::Status GatewayServiceImpl::Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                                          v1::GenerateResponse* resp) {
  if (grpc::Status s = CheckCaller(*ctx); !s.ok()) return s;
  return Answer(generator_.Generate(*req, [ctx] { return ctx->IsCancelled(); }), resp);
}

grpc::Status GatewayServiceImpl::ProposeIdeas(grpc::ServerContext* ctx,
                                              const v1::ProposeIdeasRequest* req,
                                              v1::ProposeIdeasResponse* resp) {
  if (grpc::Status s = CheckCaller(*ctx); !s.ok()) return s;
  return Answer(generator_.ProposeIdeas(*req, [ctx] { return ctx->IsCancelled(); }), resp);
}

grpc::Status GatewayServiceImpl::CheckLlmSettings(grpc::ServerContext* ctx,
                                                  const v1::LlmSettings* req,
                                                  v1::CheckLlmSettingsResponse*) {
  if (grpc::Status s = CheckCaller(*ctx); !s.ok()) return s;
  return ToGrpcStatus(generator_.CheckSettings(*req));
}

}  // namespace kforge
