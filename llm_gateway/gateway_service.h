// gRPC adapter for kforge.v1.GatewayService: hands each RPC to the Generator (generator.h)
// and converts its absl::Status to the RPC's status.
//
// Thread-safety: thread-safe (the Generator is); the Generator must outlive the service.
#ifndef KFORGE_LLM_GATEWAY_GATEWAY_SERVICE_H_
#define KFORGE_LLM_GATEWAY_GATEWAY_SERVICE_H_

#include "kforge/v1/gateway.grpc.pb.h"
#include "llm_gateway/generator.h"

namespace kforge {

class GatewayServiceImpl final : public v1::GatewayService::Service {
 public:
  explicit GatewayServiceImpl(gateway::Generator& generator) : generator_(generator) {}

  grpc::Status Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                        v1::GenerateResponse* resp) override;
  grpc::Status ProposeIdeas(grpc::ServerContext* ctx, const v1::ProposeIdeasRequest* req,
                            v1::ProposeIdeasResponse* resp) override;

 private:
  gateway::Generator& generator_;
};

}  // namespace kforge

#endif  // KFORGE_LLM_GATEWAY_GATEWAY_SERVICE_H_
