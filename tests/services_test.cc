// The service binaries as a user runs them: each starts on port 0, reports its ports in the
// ready file, answers gRPC health and /metrics, and exits 0 on SIGTERM. The coordinator
// stores tasks and registers workers against a real PostgreSQL, and refuses a database whose
// schema is newer than it.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/channel.h"
#include "common/pg.h"
#include "common/secrets.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kforge/v1/jobs.grpc.pb.h"
#include "migrations/migrator.h"
#include "tests/loopback.h"
#include "tests/pg_harness.h"
#include "tests/service_process.h"
#include "tests/test_pki.h"
#include "tests/test_tokens.h"

namespace kforge {
namespace {

using ::testing::HasSubstr;

// gtest owns the environment.
::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

constexpr double kStopLimitS = 15;

constexpr char kReluTask[] = R"py(import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
)py";

std::string NewDatabase(const std::string& name) {
  auto url = PgTestEnvironment::server().CreateDatabase(name);
  EXPECT_TRUE(url.ok()) << url.status();
  return url.ok() ? *url : "";
}

std::unique_ptr<ServiceProcess> StartOrFail(const std::string& binary,
                                            std::vector<std::string> flags) {
  auto service = ServiceProcess::Start(BuiltBinary(binary), std::move(flags));
  EXPECT_TRUE(service.ok()) << service.status();
  return service.ok() ? std::move(service).value() : nullptr;
}

// The admin token every coordinator of this binary accepts.
TestTokens& Tokens() {
  static auto* tokens = new TestTokens();
  return *tokens;
}

std::unique_ptr<ServiceProcess> StartCoordinator(const std::string& database) {
  return StartOrFail("coordinator/kforge-coordinator",
                     {"--database_url=" + NewDatabase(database), "--db_pool_size=4",
                      Tokens().BootstrapFlag()});
}

// JobService as a researcher and operator.
std::unique_ptr<v1::JobService::Stub> JobStub(const ServiceProcess& coordinator) {
  std::string token =
      Tokens().Create(coordinator.grpc_address(), "tester", "default", {"researcher", "operator"})
          .token();
  return v1::JobService::NewStub(
      MakeChannel(coordinator.grpc_address(), {token, TestPki::Shared().Client()}));
}

// --token_file of a worker token.
std::string WorkerTokenFlag(const ServiceProcess& coordinator) {
  return "--token_file=" +
         Tokens().File("worker.token",
                       Tokens().Create(coordinator.grpc_address(), "node", "default", {"worker"})
                           .token());
}

void SetDeadline(grpc::ClientContext& ctx) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
}

// What every service promises: health, /metrics, a clean exit on SIGTERM.
void ExpectServesThenStopsOnSigterm(ServiceProcess& service) {
  auto health = HealthStatus(service.grpc_address());
  ASSERT_TRUE(health.ok()) << health.status() << "\nlog:\n" << service.log();
  EXPECT_EQ(*health, "SERVING");

  auto metrics = HttpGet(service.metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->status, 200) << metrics->headers;
  EXPECT_THAT(metrics->body, HasSubstr("# TYPE "));

  SubprocessResult exit = service.Terminate(kStopLimitS);
  EXPECT_FALSE(exit.timed_out) << "still running " << kStopLimitS << " s after SIGTERM";
  EXPECT_EQ(exit.term_signal, 0) << exit.Describe();
  EXPECT_EQ(exit.exit_code, 0) << exit.Describe() << "\nlog:\n" << service.log();
  EXPECT_LT(exit.wall_s, kStopLimitS);
}

TEST(ServicesTest, CoordinatorServesHealthAndMetricsAndStopsOnSigterm) {
  auto coordinator = StartCoordinator("coordinator_lifecycle");
  ASSERT_NE(coordinator, nullptr);
  ExpectServesThenStopsOnSigterm(*coordinator);
}

TEST(ServicesTest, GatewayServesHealthAndMetricsAndStopsOnSigterm) {
  auto gateway = StartOrFail(
      "llm_gateway/kforge-gateway",
      {"--caller_token_file=" + Tokens().File("gateway.token", NewToken().value())});
  ASSERT_NE(gateway, nullptr);
  ExpectServesThenStopsOnSigterm(*gateway);
}

TEST(ServicesTest, WorkerServesHealthAndMetricsAndStopsOnSigterm) {
  auto coordinator = StartCoordinator("worker_lifecycle");
  ASSERT_NE(coordinator, nullptr);
  auto worker = StartOrFail("gpu_worker/kforge-worker", {"--coordinator=" + coordinator->grpc_address(),
                                                         WorkerTokenFlag(*coordinator)});
  ASSERT_NE(worker, nullptr);
  ExpectServesThenStopsOnSigterm(*worker);
}

TEST(ServicesTest, WorkerStopsOnSigtermWhileTheCoordinatorIsDown) {
  // Registration keeps retrying against a closed port; SIGTERM must still end it promptly.
  auto port = UnusedLoopbackPort();
  ASSERT_TRUE(port.ok()) << port.status();
  auto worker =
      StartOrFail("gpu_worker/kforge-worker", {absl::StrCat("--coordinator=127.0.0.1:", *port)});
  ASSERT_NE(worker, nullptr);
  ExpectServesThenStopsOnSigterm(*worker);
}

// The coordinator's listing of workers once one has registered (registration is asynchronous:
// polled, for at most 30 s).
void AwaitWorkers(ServiceProcess& coordinator, v1::ListWorkersResponse* listed) {
  auto stub = JobStub(coordinator);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (true) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    listed->Clear();
    grpc::Status s = stub->ListWorkers(&ctx, v1::ListWorkersRequest(), listed);
    ASSERT_TRUE(s.ok()) << s.error_message();
    if (listed->workers_size() > 0 || std::chrono::steady_clock::now() > deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TEST(ServicesTest, WorkerRegistersWithTheCoordinator) {
  auto coordinator = StartCoordinator("worker_registers");
  ASSERT_NE(coordinator, nullptr);
  auto worker = StartOrFail(
      "gpu_worker/kforge-worker",
      {"--coordinator=" + coordinator->grpc_address(), "--gpu_type=test-gpu", "--slots=3",
       WorkerTokenFlag(*coordinator)});
  ASSERT_NE(worker, nullptr);

  v1::ListWorkersResponse listed;
  ASSERT_NO_FATAL_FAILURE(AwaitWorkers(*coordinator, &listed));
  ASSERT_EQ(listed.workers_size(), 1) << "worker log:\n" << worker->log();
  const v1::WorkerInfo& info = listed.workers(0);
  EXPECT_EQ(info.gpu_type(), "test-gpu");
  EXPECT_EQ(info.slots(), 3u);
  EXPECT_TRUE(info.alive());
  EXPECT_EQ(info.leases_held(), 0u);
  EXPECT_FALSE(info.hostname().empty());
  EXPECT_EQ(info.worker_id().size(), 36u) << info.worker_id();  // a UUID
}

// GPU turns (docs/evaluation.md): --lanes_per_gpu multiplies the slots it offers; the lock
// files live in a directory of the worker's alone, removed when it stops.
TEST(ServicesTest, AWorkerWithLanesOffersThemAndRemovesItsLocksWhenItStops) {
  auto coordinator = StartCoordinator("worker_lanes");
  ASSERT_NE(coordinator, nullptr);
  auto worker =
      StartOrFail("gpu_worker/kforge-worker", {"--coordinator=" + coordinator->grpc_address(),
                                               "--gpu_type=test-gpu", "--device=cpu", "--slots=1",
                                               "--lanes_per_gpu=3", WorkerTokenFlag(*coordinator)});
  ASSERT_NE(worker, nullptr);
  v1::ListWorkersResponse listed;
  ASSERT_NO_FATAL_FAILURE(AwaitWorkers(*coordinator, &listed));
  ASSERT_EQ(listed.workers_size(), 1) << worker->log();
  EXPECT_EQ(listed.workers(0).slots(), 3u);
  std::smatch dir;
  const std::string log = worker->log();
  ASSERT_TRUE(std::regex_search(log, dir, std::regex(R"re("gpu_turns_dir":"([^"]+)")re"))) << log;
  struct stat st;
  ASSERT_EQ(stat(dir[1].str().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(stat((dir[1].str() + "/cpu.lock").c_str(), &st), 0);
  SubprocessResult exit = worker->Terminate(kStopLimitS);
  EXPECT_EQ(exit.exit_code, 0) << exit.Describe();
  EXPECT_NE(stat(dir[1].str().c_str(), &st), 0) << "left behind: " << dir[1];

  auto refused =
      ServiceProcess::Start(BuiltBinary("gpu_worker/kforge-worker"),
                            {"--coordinator=" + coordinator->grpc_address(), "--device=cpu",
                             "--lanes_per_gpu=0", WorkerTokenFlag(*coordinator)});
  EXPECT_FALSE(refused.ok()) << "--lanes_per_gpu=0 must stop the worker";
}

TEST(ServicesTest, SubmitTaskStoresATaskOnceByContent) {
  auto coordinator = StartCoordinator("submit_task");
  ASSERT_NE(coordinator, nullptr);
  auto stub = JobStub(*coordinator);
  v1::SubmitTaskRequest request;
  request.set_name("level1/relu");
  request.set_source(kReluTask);
  request.mutable_options()->set_precision("fp16");

  v1::SubmitTaskResponse first;
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    grpc::Status s = stub->SubmitTask(&ctx, request, &first);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_TRUE(first.created());
  EXPECT_EQ(first.task_id(), Sha256Hex(kReluTask));

  v1::SubmitTaskResponse second;
  {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    request.set_name("another name, same source");
    grpc::Status s = stub->SubmitTask(&ctx, request, &second);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_FALSE(second.created());
  EXPECT_EQ(second.task_id(), first.task_id());

  auto conn = PgConnection::Connect(PgTestEnvironment::server().Url("submit_task"));
  ASSERT_TRUE(conn.ok()) << conn.status();
  auto rows = (*conn)->Exec(
      "SELECT task_id, name, source, options->>'precision' AS precision "
      "FROM tasks");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->rows(), 1);
  EXPECT_EQ(rows->Get(0, "task_id"), first.task_id());
  EXPECT_EQ(rows->Get(0, "name"), "level1/relu");
  EXPECT_EQ(rows->Get(0, "source"), kReluTask);
  EXPECT_EQ(rows->Get(0, "precision"), "fp16");
}

TEST(ServicesTest, SubmitTaskRejectsMalformedTasksWithTheReason) {
  auto coordinator = StartCoordinator("malformed_task");
  ASSERT_NE(coordinator, nullptr);
  auto stub = JobStub(*coordinator);

  v1::SubmitTaskRequest no_model;
  no_model.set_source("import torch\n\ndef get_inputs():\n    return []\n");
  v1::SubmitTaskResponse response;
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  grpc::Status s = stub->SubmitTask(&ctx, no_model, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(s.error_message(),
            "not a KernelBench task: missing top-level class Model, def get_init_inputs()");

  v1::SubmitTaskRequest bad_precision;
  bad_precision.set_source(kReluTask);
  bad_precision.mutable_options()->set_precision("fp8");
  grpc::ClientContext ctx2;
  SetDeadline(ctx2);
  s = stub->SubmitTask(&ctx2, bad_precision, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("'fp8'"));

  auto conn = PgConnection::Connect(PgTestEnvironment::server().Url("malformed_task"));
  ASSERT_TRUE(conn.ok()) << conn.status();
  auto rows = (*conn)->Exec("SELECT count(*) AS n FROM tasks");
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->GetInt(0, "n"), 0);
}

TEST(ServicesTest, CoordinatorRefusesADatabaseWithANewerSchema) {
  std::string url = NewDatabase("newer_schema");
  {
    auto conn = PgConnection::Connect(url);
    ASSERT_TRUE(conn.ok()) << conn.status();
    ASSERT_TRUE(ApplyMigrations(**conn, EmbeddedMigrations()).ok());
    ASSERT_TRUE((*conn)
                    ->Exec("INSERT INTO schema_migrations (version, name, checksum) "
                           "VALUES (999, '0999_from_the_future', 'abc')")
                    .ok());
  }
  TempDir dir;
  SpawnOptions o;
  o.argv = {BuiltBinary("coordinator/kforge-coordinator"), "--database_url=" + url,
            "--grpc_address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
            "--ready_file=" + dir.path() + "/ready.json"};
  o.wall_limit_s = 60;
  SubprocessResult r = RunSubprocess(std::move(o));
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.stderr_data, HasSubstr("database schema is at version 999"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/ready.json"));
}

TEST(ServicesTest, CoordinatorGivesUpOnAnUnreachableDatabase) {
  auto port = UnusedLoopbackPort();
  ASSERT_TRUE(port.ok()) << port.status();
  SpawnOptions o;
  o.argv = {BuiltBinary("coordinator/kforge-coordinator"),
            absl::StrCat("--database_url=postgresql://kforge@127.0.0.1:", *port, "/none"),
            "--db_wait_s=1", "--grpc_address=127.0.0.1:0", "--metrics_address=127.0.0.1:0"};
  o.wall_limit_s = 60;
  SubprocessResult r = RunSubprocess(std::move(o));
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.Describe();
  EXPECT_THAT(r.stderr_data, HasSubstr("database unreachable"));
}

}  // namespace
}  // namespace kforge
