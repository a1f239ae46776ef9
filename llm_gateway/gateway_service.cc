#include "llm_gateway/gateway_service.h"

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

grpc::Status GatewayServiceImpl::Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                                          v1::GenerateResponse* resp) {
  return Answer(generator_.Generate(*req, [ctx] { return ctx->IsCancelled(); }), resp);
}

grpc::Status GatewayServiceImpl::ProposeIdeas(grpc::ServerContext* ctx,
                                              const v1::ProposeIdeasRequest* req,
                                              v1::ProposeIdeasResponse* resp) {
  return Answer(generator_.ProposeIdeas(*req, [ctx] { return ctx->IsCancelled(); }), resp);
}

}  // namespace kforge
