// GatewayClient (gateway_client.h) over a gRPC channel to kforge-gateway.
//
// Thread-safe: calls in flight are tracked under a mutex so that CancelAll reaches them.
#ifndef KFORGE_COORDINATOR_GRPC_GATEWAY_CLIENT_H_
#define KFORGE_COORDINATOR_GRPC_GATEWAY_CLIENT_H_

#include <atomic>
#include <functional>
#include <memory>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/gateway_client.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "kforge/v1/gateway.grpc.pb.h"

namespace kforge {

class GrpcGatewayClient final : public GatewayClient {
 public:
  explicit GrpcGatewayClient(std::shared_ptr<grpc::Channel> channel)
      : stub_(v1::GatewayService::NewStub(std::move(channel))) {}

  absl::StatusOr<v1::GenerateResponse> Generate(const v1::GenerateRequest& req, double timeout_s,
                                                bool wait_for_ready) override;
  absl::StatusOr<v1::ProposeIdeasResponse> ProposeIdeas(const v1::ProposeIdeasRequest& req,
                                                        double timeout_s,
                                                        bool wait_for_ready) override;
  absl::Status CheckLlmSettings(const v1::LlmSettings& llm, double timeout_s) override;
  void CancelAll() override;

 private:
  absl::Status Call(double timeout_s, bool wait_for_ready,
                    const std::function<grpc::Status(grpc::ClientContext*)>& call);

  std::unique_ptr<v1::GatewayService::Stub> stub_;
  std::atomic<bool> cancelled_{false};
  absl::Mutex mu_;
  std::set<grpc::ClientContext*> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_GRPC_GATEWAY_CLIENT_H_
