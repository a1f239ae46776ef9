// kforge-gateway: turns search requests into prompts, calls LLM providers, parses candidates.
#include "absl/flags/flag.h"
#include "common/base/log.h"
#include "common/config.h"
#include "common/service.h"
#include "llm_gateway/gateway_service.h"

ABSL_FLAG(std::string, grpc_address, "0.0.0.0:50061", "where to serve gRPC");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0:9465", "where to serve /metrics");
ABSL_FLAG(std::string, ready_file, "", "write bound ports here once serving");

int main(int argc, char** argv) {
  kforge::BlockTerminationSignals();
  kforge::InitFromFlagsAndEnv(argc, argv, "gateway", "kforge-gateway: LLM proposals");
  kforge::GatewayServiceImpl gateway;
  kforge::ServiceHost host({.name = "gateway",
                            .grpc_address = absl::GetFlag(FLAGS_grpc_address),
                            .metrics_address = absl::GetFlag(FLAGS_metrics_address),
                            .ready_file = absl::GetFlag(FLAGS_ready_file)});
  host.AddService(&gateway);
  if (absl::Status s = host.Start(); !s.ok()) {
    kforge::LogError("cannot start", {{"error", std::string(s.message())}});
    return 1;
  }
  int sig = kforge::WaitForTerminationSignal();
  kforge::LogInfo("shutting down", {{"signal", std::to_string(sig)}});
  host.Shutdown();
  return 0;
}
