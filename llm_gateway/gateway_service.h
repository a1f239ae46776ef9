// gRPC adapter for kforge.v1.GatewayService: hands each RPC to the Generator (generator.h)
// and converts its absl::Status to the RPC's status. Callers are the coordinators: each call
// must carry their token (`authorization: Bearer <token>`, the gateway's --caller_token_file),
// else UNAUTHENTICATED; an empty token (--allow_unauthenticated) lets anyone call.
//
// Thread-safety: thread-safe (the Generator is); the Generator must outlive the service.
#ifndef KFORGE_LLM_GATEWAY_GATEWAY_SERVICE_H_
#define KFORGE_LLM_GATEWAY_GATEWAY_SERVICE_H_

#include "kforge/v1/gateway.grpc.pb.h"
#include "llm_gateway/generator.h"

namespace kforge {

class GatewayServiceImpl final : public v1::GatewayService::Service {
 public:
  GatewayServiceImpl(gateway::Generator& generator, std::string caller_token)
      : generator_(generator), caller_header_(caller_token.empty() ? "" : "Bearer " + caller_token) {}

  grpc::Status Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                        v1::GenerateResponse* resp) override;
  grpc::Status ProposeIdeas(grpc::ServerContext* ctx, const v1::ProposeIdeasRequest* req,
                            v1::ProposeIdeasResponse* resp) override;
  grpc::Status CheckLlmSettings(grpc::ServerContext* ctx, const v1::LlmSettings* req,
                                v1::CheckLlmSettingsResponse* resp) override;

 private:
  grpc::Status CheckCaller(const grpc::ServerContext& ctx) const;

  gateway::Generator& generator_;
  const std::string caller_header_;  // "" when anyone may call
};

}  // namespace kforge

#endif  // KFORGE_LLM_GATEWAY_GATEWAY_SERVICE_H_
