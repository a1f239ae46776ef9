// kforge-coordinator: job and worker API in front of PostgreSQL.
#include <chrono>
#include <thread>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/config.h"
#include "common/pg.h"
#include "common/service.h"
#include "common/channel.h"
#include "common/secrets.h"
#include "common/tls.h"
#include "coordinator/admin_service.h"
#include "coordinator/auth.h"
#include "coordinator/grpc_gateway_client.h"
#include "coordinator/job_runner.h"
#include "coordinator/job_service.h"
#include "coordinator/job_store.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "coordinator/notifier.h"
#include "coordinator/pg_audit_log.h"
#include "coordinator/pg_store.h"
#include "coordinator/pg_token_store.h"
#include "coordinator/rpc_auth.h"
#include "coordinator/queue_store.h"
#include "coordinator/reaper.h"
#include "coordinator/worker_service.h"
#include "migrations/migrator.h"

ABSL_FLAG(std::string, database_url, "postgresql:///kforge",
          "libpq connection string (a password in it is visible in the process list: prefer "
          "--database_url_file or KFORGE_DATABASE_URL)");
ABSL_FLAG(std::string, database_url_file, "",
          "a file holding the libpq connection string (wins over --database_url)");
ABSL_FLAG(std::string, grpc_address, "0.0.0.0:50051", "where to serve gRPC");
ABSL_FLAG(std::string, metrics_address, "0.0.0.0:9464", "where to serve /metrics");
ABSL_FLAG(std::string, ready_file, "", "write bound ports here once serving");
ABSL_FLAG(bool, migrate, true, "apply database migrations at startup");
ABSL_FLAG(double, db_wait_s, 30, "how long to wait for the database at startup");
ABSL_FLAG(int, db_pool_size, 16, "PostgreSQL connections");
ABSL_FLAG(double, lease_timeout_s, 15, "a lease not heartbeated for this long is reclaimed");
ABSL_FLAG(double, heartbeat_interval_s, 2, "how often workers heartbeat");
ABSL_FLAG(int64_t, max_queue_depth, 100000, "EvaluateBatch answers RESOURCE_EXHAUSTED past this");
ABSL_FLAG(std::string, gateway_address, "127.0.0.1:50061",
          "the LLM gateway (kforge-gateway) that optimization jobs ask for candidates");
ABSL_FLAG(int, max_running_jobs, 16, "optimization jobs this coordinator runs at once");
ABSL_FLAG(std::string, gateway_token_file, "",
          "a file holding the token this coordinator calls the gateway with (the gateway's "
          "--caller_token_file)");
ABSL_FLAG(int, tenant_max_active_jobs, 0,
          "optimization jobs one tenant may have queued or running (0: no quota); past it "
          "SubmitJob answers RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, tenant_max_queued_evaluations, 0,
          "evaluations one tenant may have queued, its batches and its jobs' together (0: no "
          "quota); past it EvaluateBatch answers RESOURCE_EXHAUSTED and jobs wait");
ABSL_FLAG(std::vector<std::string>, gpu_pools, {},
          "GPU types that may be queued for although no worker of them registered yet (pools "
          "scaled to zero); besides these, \"any\" and every type a worker registered with");
ABSL_FLAG(bool, allow_unauthenticated, false,
          "serve every caller as the principal 'anonymous' with every role (no tokens): only "
          "for a trusted loopback; the coordinator logs a warning");
ABSL_FLAG(std::string, bootstrap_admin_token_file, "",
          "a file holding an admin token (kf_ and 64 hex digits) to accept as principal "
          "'bootstrap-admin'; its hash is stored at startup unless already present");
ABSL_FLAG(std::string, bootstrap_worker_token_file, "",
          "a file holding a worker token (kf_ and 64 hex digits) to accept as principal "
          "'bootstrap-worker' with the worker role; its hash is stored at startup unless already "
          "present (the Helm chart gives its workers and coordinators the same generated file)");
ABSL_FLAG(std::string, task_python, "python3",
          "the Python that compiles submitted tasks (standard library only) to refuse those "
          "that do not parse; empty: no compile check, only the pattern check");

namespace kforge {
namespace {

int Run() {
  auto database_url = SecretFromValueOrFile(absl::GetFlag(FLAGS_database_url),
                                            absl::GetFlag(FLAGS_database_url_file));
  if (!database_url.ok()) {
    LogError("refusing to start", {{"error", std::string(database_url.status().message())}});
    return 1;
  }
  // Wait for the database (it may be starting alongside us), then migrate and check.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int>(absl::GetFlag(FLAGS_db_wait_s) * 1000));
  absl::StatusOr<std::unique_ptr<PgConnection>> conn;
  while (true) {
    conn = PgConnection::Connect(*database_url);
    if (conn.ok() || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  if (!conn.ok()) {
    LogError("database unreachable", {{"error", std::string(conn.status().message())}});
    return 1;
  }
  if (absl::GetFlag(FLAGS_migrate)) {
    auto applied = ApplyMigrations(**conn, EmbeddedMigrations());
    if (!applied.ok()) {
      LogError("migrations failed", {{"error", std::string(applied.status().message())}});
      return 1;
    }
  }
  if (absl::Status s = CheckSchemaVersion(**conn, EmbeddedMigrations()); !s.ok()) {
    LogError("refusing to start", {{"error", std::string(s.message())}});
    return 1;
  }
  conn->reset();

  PgPool pool(*database_url, absl::GetFlag(FLAGS_db_pool_size));
  PgStore store(pool);
  QueueStore queue(pool);
  Notifier notifier;

  ServiceHost host({.name = "coordinator",
                    .grpc_address = absl::GetFlag(FLAGS_grpc_address),
                    .metrics_address = absl::GetFlag(FLAGS_metrics_address),
                    .ready_file = absl::GetFlag(FLAGS_ready_file),
                    .tls = TlsFromFlags()});
  JobServiceImpl::Limits limits;
  limits.max_queue_depth = absl::GetFlag(FLAGS_max_queue_depth);
  limits.gpu_pools = absl::GetFlag(FLAGS_gpu_pools);
  limits.max_tenant_active_jobs = absl::GetFlag(FLAGS_tenant_max_active_jobs);
  limits.max_tenant_queued = absl::GetFlag(FLAGS_tenant_max_queued_evaluations);
  std::unique_ptr<PythonSyntaxChecker> syntax;
  if (!absl::GetFlag(FLAGS_task_python).empty()) {
    syntax = std::make_unique<PythonSyntaxChecker>(absl::GetFlag(FLAGS_task_python));
    if (absl::Status s = syntax->SelfTest(); !s.ok()) {
      LogError("refusing to start", {{"error", std::string(s.message())}});
      return 1;
    }
  } else {
    LogWarning("--task_python is empty: tasks are not compiled before they are stored");
  }
  PgTokenStore tokens(pool);
  Authenticator authenticator(tokens);
  const bool open = absl::GetFlag(FLAGS_allow_unauthenticated);
  if (open) {
    LogWarning("--allow_unauthenticated: every caller may do everything; use only on a trusted "
               "loopback");
  }
  for (const auto& [file, who, what] :
       {std::tuple{absl::GetFlag(FLAGS_bootstrap_admin_token_file), kBootstrapAdmin, "admin"},
        std::tuple{absl::GetFlag(FLAGS_bootstrap_worker_token_file), kBootstrapWorker, "worker"}}) {
    if (file.empty()) continue;
    auto token = ReadSecretFile(file);
    absl::Status s = token.ok() ? EnsureBootstrapToken(tokens, *token, who) : token.status();
    if (!s.ok()) {
      LogError("refusing to start",
               {{"error", absl::StrCat("bootstrap ", what, " token: ", s.message())}});
      return 1;
    }
  }
  RpcAuth auth(open ? nullptr : &authenticator);
  PgAuditLog audit(pool);
  AdminServiceImpl admin(tokens, auth, &audit);
  std::string gateway_token;
  if (const std::string file = absl::GetFlag(FLAGS_gateway_token_file); !file.empty()) {
    auto token = ReadSecretFile(file);
    if (!token.ok()) {
      LogError("refusing to start", {{"error", std::string(token.status().message())}});
      return 1;
    }
    gateway_token = *token;
  }
  GrpcGatewayClient gateway(
      MakeChannel(absl::GetFlag(FLAGS_gateway_address), {gateway_token, TlsFromFlags()}));
  JobStore job_store(pool);
  JobServiceImpl jobs(store, queue, notifier, auth, limits, &job_store, syntax.get(), &audit,
                      &gateway);
  WorkerTimings timings;
  timings.lease_timeout_s = absl::GetFlag(FLAGS_lease_timeout_s);
  timings.heartbeat_interval_s = absl::GetFlag(FLAGS_heartbeat_interval_s);
  WorkerServiceImpl workers(store, queue, notifier, auth, host.metrics().registry(), timings,
                            &audit);
  host.AddService(&admin);
  host.AddService(&jobs);
  host.AddService(&workers);
  if (absl::Status s = host.Start(); !s.ok()) {
    LogError("cannot start", {{"error", std::string(s.message())}});
    return 1;
  }
  Reaper reaper(queue, notifier, host.metrics().registry(), /*interval_s=*/1.0);
  JobRunner::Options runner_options;
  runner_options.max_running_jobs = absl::GetFlag(FLAGS_max_running_jobs);
  runner_options.max_queue_depth = limits.max_queue_depth;
  runner_options.max_tenant_queued = limits.max_tenant_queued;
  runner_options.metrics = &host.metrics().registry();
  JobRunner runner(pool, job_store, queue, notifier, gateway, runner_options);
  runner.Start();
  int sig = WaitForTerminationSignal();
  LogInfo("shutting down", {{"signal", std::to_string(sig)}});
  runner.Stop();  // running jobs stay 'running' and resume at the next start
  reaper.Stop();
  host.Shutdown();
  return 0;
}

}  // namespace
}  // namespace kforge

int main(int argc, char** argv) {
  kforge::BlockTerminationSignals();
  kforge::InitFromFlagsAndEnv(argc, argv, "coordinator",
                              "kforge-coordinator: job and worker API over PostgreSQL");
  return kforge::Run();
}
