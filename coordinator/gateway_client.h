// How optimization jobs reach the LLM gateway: one call at a time per job, each with a
// deadline, all cancellable at once when the coordinator stops. The job runner depends on this
// interface only; GrpcGatewayClient is the adapter over kforge.v1.GatewayService.
//
// Thread-safety: implementations are called from every job's thread at once.
#ifndef KFORGE_COORDINATOR_GATEWAY_CLIENT_H_
#define KFORGE_COORDINATOR_GATEWAY_CLIENT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "kforge/v1/gateway.pb.h"

namespace kforge {

class GatewayClient {
 public:
  virtual ~GatewayClient() = default;
  // The gateway's answer, or its status (CANCELLED after CancelAll). `wait_for_ready`: wait
  // for an unreachable gateway until the deadline instead of failing at once.
  virtual absl::StatusOr<v1::GenerateResponse> Generate(const v1::GenerateRequest& req,
                                                        double timeout_s,
                                                        bool wait_for_ready) = 0;
  virtual absl::StatusOr<v1::ProposeIdeasResponse> ProposeIdeas(
      const v1::ProposeIdeasRequest& req, double timeout_s, bool wait_for_ready) = 0;
  // OK, or the status the gateway would refuse `llm` with (GatewayService.CheckLlmSettings).
  virtual absl::Status CheckLlmSettings(const v1::LlmSettings& llm, double timeout_s) = 0;
  // Cancels the calls in flight and every later one.
  virtual void CancelAll() = 0;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_GATEWAY_CLIENT_H_
