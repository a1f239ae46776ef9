// gRPC adapter for kforge.v1.GatewayService. Generation (prompts, providers, the offline
// proposer) is built by the optimization-jobs work; until then Generate answers UNIMPLEMENTED
// with a message saying so, and the binary already serves health and /metrics.
//
// Thread-safety: stateless.
#ifndef KFORGE_LLM_GATEWAY_GATEWAY_SERVICE_H_
#define KFORGE_LLM_GATEWAY_GATEWAY_SERVICE_H_

#include "kforge/v1/gateway.grpc.pb.h"

namespace kforge {

class GatewayServiceImpl final : public v1::GatewayService::Service {
 public:
  grpc::Status Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                        v1::GenerateResponse* resp) override;
};

}  // namespace kforge

#endif  // KFORGE_LLM_GATEWAY_GATEWAY_SERVICE_H_
