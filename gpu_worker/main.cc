// kforge-worker: registers with the coordinator and serves health and /metrics. The lease
// stream and the sandboxed kforge-eval children come with the distributed-evaluation work.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/flags/flag.h"
#include "common/base/log.h"
#include "common/config.h"
#include "common/service.h"
#include "kforge/v1/worker.grpc.pb.h"

ABSL_FLAG(std::string, coordinator, "localhost:50051", "coordinator gRPC address");
ABSL_FLAG(std::string, grpc_address, "0.0.0.0:50071", "where to serve health");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0:9466", "where to serve /metrics");
ABSL_FLAG(std::string, ready_file, "", "write bound ports here once serving");
ABSL_FLAG(std::string, gpu_type, "cpu", "scheduling type this worker serves (cpu: CPU mode)");
ABSL_FLAG(int, slots, 1, "evaluations at once (CPU mode; one per GPU otherwise)");

namespace kforge {
namespace {

std::string Hostname() {
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// Registers with exponential backoff until it succeeds or `stop` is set.
void RegisterLoop(const std::atomic<bool>& stop) {
  auto channel = grpc::CreateChannel(absl::GetFlag(FLAGS_coordinator),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::WorkerService::NewStub(channel);
  v1::RegisterRequest req;
  v1::WorkerFacts* f = req.mutable_facts();
  f->set_hostname(Hostname());
  f->set_gpu_type(absl::GetFlag(FLAGS_gpu_type));
  f->set_gpu_name(absl::GetFlag(FLAGS_gpu_type));
  f->set_slots(static_cast<uint32_t>(absl::GetFlag(FLAGS_slots)));
  double backoff_s = 0.2;
  while (!stop) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::RegisterResponse resp;
    grpc::Status s = stub->Register(&ctx, req, &resp);
    if (s.ok()) {
      LogInfo("registered", {{"worker_id", resp.worker_id()}});
      return;
    }
    LogWarning("registration failed; retrying",
               {{"error", s.error_message()}, {"backoff_s", std::to_string(backoff_s)}});
    for (double waited = 0; waited < backoff_s && !stop; waited += 0.05) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    backoff_s = std::min(backoff_s * 2, 10.0);
  }
}

int Run() {
  ServiceHost host({.name = "worker",
                    .grpc_address = absl::GetFlag(FLAGS_grpc_address),
                    .metrics_address = absl::GetFlag(FLAGS_metrics_address),
                    .ready_file = absl::GetFlag(FLAGS_ready_file)});
  if (absl::Status s = host.Start(); !s.ok()) {
    LogError("cannot start", {{"error", std::string(s.message())}});
    return 1;
  }
  std::atomic<bool> stop{false};
  std::thread registrar([&] { RegisterLoop(stop); });
  int sig = WaitForTerminationSignal();
  LogInfo("shutting down", {{"signal", std::to_string(sig)}});
  stop = true;
  registrar.join();
  host.Shutdown();
  return 0;
}

}  // namespace
}  // namespace kforge

int main(int argc, char** argv) {
  kforge::BlockTerminationSignals();
  kforge::InitFromFlagsAndEnv(argc, argv, "worker", "kforge-worker: runs evaluations");
  return kforge::Run();
}
