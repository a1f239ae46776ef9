#include "coordinator/grpc_gateway_client.h"

#include <chrono>

#include "common/service.h"

namespace kforge {

absl::Status GrpcGatewayClient::Call(
    double timeout_s, bool wait_for_ready,
    const std::function<grpc::Status(grpc::ClientContext*)>& call) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  ctx.set_wait_for_ready(wait_for_ready);
  {
    absl::MutexLock lock(&mu_);
    calls_.insert(&ctx);
  }
  grpc::Status s = cancelled_ ? grpc::Status::CANCELLED : call(&ctx);
  {
    absl::MutexLock lock(&mu_);
    calls_.erase(&ctx);
  }
  return FromGrpcStatus(s);
}

absl::StatusOr<v1::GenerateResponse> GrpcGatewayClient::Generate(const v1::GenerateRequest& req,
                                                                 double timeout_s,
                                                                 bool wait_for_ready) {
  v1::GenerateResponse resp;
  absl::Status s = Call(timeout_s, wait_for_ready,
                        [&](grpc::ClientContext* ctx) { return stub_->Generate(ctx, req, &resp); });
  if (!s.ok()) return s;
  return resp;
}

absl::StatusOr<v1::ProposeIdeasResponse> GrpcGatewayClient::ProposeIdeas(
    const v1::ProposeIdeasRequest& req, double timeout_s, bool wait_for_ready) {
  v1::ProposeIdeasResponse resp;
  absl::Status s = Call(timeout_s, wait_for_ready, [&](grpc::ClientContext* ctx) {
    return stub_->ProposeIdeas(ctx, req, &resp);
  });
  if (!s.ok()) return s;
  return resp;
}

absl::Status GrpcGatewayClient::CheckLlmSettings(const v1::LlmSettings& llm, double timeout_s) {
  v1::CheckLlmSettingsResponse resp;
  return Call(timeout_s, /*wait_for_ready=*/false, [&](grpc::ClientContext* ctx) {
    return stub_->CheckLlmSettings(ctx, llm, &resp);
  });
}

void GrpcGatewayClient::CancelAll() {
  cancelled_ = true;
  absl::MutexLock lock(&mu_);
  for (grpc::ClientContext* ctx : calls_) ctx->TryCancel();
}

}  // namespace kforge
