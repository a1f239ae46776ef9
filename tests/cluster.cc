#include "tests/cluster.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/loopback.h"
#include "tests/pg_harness.h"
#include "tests/source_file.h"

namespace kforge {

using Clock = std::chrono::steady_clock;

Cluster::Cluster(const std::string& db, bool gateway) {
  auto url = PgTestEnvironment::server().CreateDatabase(db);
  EXPECT_TRUE(url.ok()) << url.status();
  url_ = url.ok() ? *url : "";
  auto port = UnusedLoopbackPort();
  EXPECT_TRUE(port.ok());
  address_ = absl::StrCat("127.0.0.1:", port.ok() ? *port : 0);
  if (gateway) {
    auto gw_port = UnusedLoopbackPort();
    EXPECT_TRUE(gw_port.ok());
    gateway_address_ = absl::StrCat("127.0.0.1:", gw_port.ok() ? *gw_port : 0);
  }
  StartCoordinator();
  if (gateway) {
    auto g = ServiceProcess::Start(
        BuiltBinary("llm_gateway/kforge-gateway"),
        {"--database_url=" + url_, "--grpc_address=" + gateway_address_, "--llm_provider=offline"});
    EXPECT_TRUE(g.ok()) << g.status();
    if (g.ok()) gateway_ = std::move(g).value();
  }
}

void Cluster::StartCoordinator() {
  std::vector<std::string> flags = {"--database_url=" + url_, "--grpc_address=" + address_,
                                    "--lease_timeout_s=3", "--heartbeat_interval_s=0.5",
                                    "--db_pool_size=6"};
  if (!gateway_address_.empty()) flags.push_back("--gateway_address=" + gateway_address_);
  auto c = ServiceProcess::Start(BuiltBinary("coordinator/kforge-coordinator"), flags);
  ASSERT_TRUE(c.ok()) << c.status();
  coordinator_ = std::move(c).value();
}

ServiceProcess* Cluster::StartWorker(const std::string& gpu_type, int slots,
                                     const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--coordinator=" + address_, "--gpu_type=" + gpu_type,
                                   "--device=cpu", "--slots=" + std::to_string(slots),
                                   "--cache_dir=/tmp/kforge-test-cache"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto w = ServiceProcess::Start(BuiltBinary("gpu_worker/kforge-worker"), args);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return nullptr;
  workers_.push_back(std::move(w).value());
  return workers_.back().get();
}

std::unique_ptr<v1::JobService::Stub> Cluster::Stub() {
  return v1::JobService::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
}

std::string Cluster::SubmitTask(const std::string& relative) {
  v1::SubmitTaskRequest req;
  req.set_name(relative);
  req.set_source(ReadSourceFile(relative));
  v1::SubmitTaskResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  grpc::Status s = Stub()->SubmitTask(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp.task_id();
}

v1::SubmitJobRequest ReluJobRequest(const std::string& task_id, int rounds, uint64_t seed) {
  v1::SubmitJobRequest req;
  req.set_task_id(task_id);
  req.add_gpu_types("cpu");
  req.set_strategy("contrastive");
  (*req.mutable_strategy_params())["prompts_per_round"] = "1";
  (*req.mutable_strategy_params())["candidates_per_prompt"] = "2";
  req.set_dialect(v1::DIALECT_KERNELBENCH);
  req.mutable_budget()->set_max_rounds(static_cast<uint32_t>(rounds));
  req.set_seed(seed);
  req.add_seed_candidates(ReadSourceFile("examples/candidates/tiny_relu/torch_chunked.py"));
  return req;
}

absl::StatusOr<PgResult> Cluster::TryQuery(const std::string& sql) {
  auto conn = PgConnection::Connect(url_);
  if (!conn.ok()) return conn.status();
  return (*conn)->Exec(sql);
}

PgResult Cluster::Query(const std::string& sql) {
  auto conn = PgConnection::Connect(url_);
  EXPECT_TRUE(conn.ok()) << conn.status();
  auto r = (*conn)->Exec(sql);
  EXPECT_TRUE(r.ok()) << r.status();
  return std::move(r).value();
}

bool Cluster::WaitFor(const std::string& sql, const std::string& want, double limit_s) {
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int>(limit_s * 1000));
  while (Clock::now() < deadline) {
    auto conn = PgConnection::Connect(url_);
    if (conn.ok()) {
      auto r = (*conn)->Exec(sql);
      if (r.ok() && r->rows() > 0 && r->Get(0, 0) == want) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace kforge
