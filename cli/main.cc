// kforge: the command-line client.
//
//   kforge health ADDRESS          exit 0 when the server at ADDRESS reports SERVING
//   kforge task add FILE [--name]  store a KernelBench task; prints its id
//   kforge workers                 list registered workers
//
// Exit codes: 0 success, 1 the server answered with an error, 2 bad usage or input,
// 3 the server could not be reached.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/flags/flag.h"
#include "grpcpp/grpcpp.h"
#include "common/config.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "kforge/v1/jobs.grpc.pb.h"

ABSL_FLAG(std::string, coordinator, "localhost:50051", "coordinator gRPC address");
ABSL_FLAG(std::string, name, "", "task name (task add); default: the file name");
ABSL_FLAG(double, timeout_s, 10, "RPC deadline in seconds");

namespace kforge {
namespace {

constexpr int kExitRpcError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

const char kUsage[] =
    "kforge: client for the kforge service\n"
    "  kforge health ADDRESS\n"
    "  kforge task add FILE [--name NAME]\n"
    "  kforge workers\n"
    "Flags may also come from the environment (KFORGE_COORDINATOR, ...).";

void SetDeadline(grpc::ClientContext& ctx) {
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(
                       static_cast<int64_t>(absl::GetFlag(FLAGS_timeout_s) * 1000)));
}

int Fail(const grpc::Status& s) {
  std::fprintf(stderr, "kforge: %s\n", s.error_message().c_str());
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                 s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
             ? kExitUnreachable
             : kExitRpcError;
}

std::unique_ptr<v1::JobService::Stub> JobStub() {
  return v1::JobService::NewStub(grpc::CreateChannel(absl::GetFlag(FLAGS_coordinator),
                                                     grpc::InsecureChannelCredentials()));
}

int Health(const std::string& address) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status s = stub->Check(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  bool serving = resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
  std::printf("%s\n", serving ? "SERVING" : "NOT_SERVING");
  return serving ? 0 : kExitRpcError;
}

int TaskAdd(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "kforge: cannot read %s\n", path.c_str());
    return kExitUsage;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  v1::SubmitTaskRequest req;
  std::string name = absl::GetFlag(FLAGS_name);
  if (name.empty()) {
    name = path.substr(path.find_last_of('/') + 1);
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".py") == 0) name.resize(name.size() - 3);
  }
  req.set_name(name);
  req.set_source(buf.str());
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::SubmitTaskResponse resp;
  grpc::Status s = JobStub()->SubmitTask(&ctx, req, &resp);
  if (!s.ok()) return Fail(s);
  std::printf("%s\t%s\t%s\n", resp.task_id().c_str(), name.c_str(),
              resp.created() ? "created" : "exists");
  return 0;
}

int Workers() {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::ListWorkersResponse resp;
  grpc::Status s = JobStub()->ListWorkers(&ctx, v1::ListWorkersRequest(), &resp);
  if (!s.ok()) return Fail(s);
  std::printf("%-36s  %-20s  %-8s  %5s  %6s  %-5s  %s\n", "WORKER", "HOST", "GPU", "SLOTS",
              "LEASES", "ALIVE", "LAST HEARTBEAT");
  for (const auto& w : resp.workers()) {
    std::printf("%-36s  %-20s  %-8s  %5u  %6u  %-5s  %s\n", w.worker_id().c_str(),
                w.hostname().c_str(), w.gpu_type().c_str(), w.slots(), w.leases_held(),
                w.alive() ? "yes" : "no", w.last_heartbeat().c_str());
  }
  return 0;
}

int Main(const std::vector<std::string>& args) {
  auto usage = [] {
    std::fprintf(stderr, "%s\n", kUsage);
    return kExitUsage;
  };
  if (args.size() < 2) return usage();
  const std::string& cmd = args[1];
  if (cmd == "health" && args.size() == 3) return Health(args[2]);
  if (cmd == "task" && args.size() == 4 && args[2] == "add") return TaskAdd(args[3]);
  if (cmd == "workers" && args.size() == 2) return Workers();
  return usage();
}

}  // namespace
}  // namespace kforge

int main(int argc, char** argv) {
  auto args = kforge::InitFromFlagsAndEnv(argc, argv, "cli", kforge::kUsage);
  return kforge::Main(args);
}
