#include "llm_gateway/gateway_service.h"

namespace kforge {

grpc::Status GatewayServiceImpl::Generate(grpc::ServerContext*, const v1::GenerateRequest* req,
                                          v1::GenerateResponse*) {
  if (req->task_source().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "task_source is required");
  }
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                      "no proposer is available in this build of kforge-gateway");
}

}  // namespace kforge
