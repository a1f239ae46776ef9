#include "tests/cluster.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/channel.h"
#include "common/secrets.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/loopback.h"
#include "tests/test_pki.h"
#include "tests/pg_harness.h"
#include "tests/source_file.h"

namespace kforge {

using Clock = std::chrono::steady_clock;

Cluster::Cluster(const std::string& db, bool gateway, std::vector<std::string> coordinator_flags,
                 const std::vector<std::string>& gateway_flags)
    : coordinator_flags_(std::move(coordinator_flags)) {
  auto url = PgTestEnvironment::server().CreateDatabase(db);
  EXPECT_TRUE(url.ok()) << url.status();
  url_ = url.ok() ? *url : "";
  if (gateway) {
    gateway_token_file_ = TokenFile("gateway.token", NewToken().value());
    auto gw_port = UnusedLoopbackPort();
    EXPECT_TRUE(gw_port.ok());
    gateway_address_ = absl::StrCat("127.0.0.1:", gw_port.ok() ? *gw_port : 0);
  }
  AddCoordinator();
  tester_token_ = CreateToken("tester", "default", {"researcher", "trainer", "operator"}).token();
  worker_token_ = CreateToken("cluster-worker", "default", {"worker"}).token();
  worker_token_file_ = TokenFile("worker.token", worker_token_);
  if (gateway) {
    std::vector<std::string> flags = {"--database_url=" + url_,
                                      "--grpc_address=" + gateway_address_,
                                      "--llm_provider=offline",
                                      "--caller_token_file=" + gateway_token_file_};
    flags.insert(flags.end(), gateway_flags.begin(), gateway_flags.end());
    auto g = ServiceProcess::Start(BuiltBinary("llm_gateway/kforge-gateway"), flags);
    EXPECT_TRUE(g.ok()) << g.status();
    if (g.ok()) gateway_ = std::move(g).value();
  }
}

size_t Cluster::AddCoordinator() {
  auto port = UnusedLoopbackPort();
  EXPECT_TRUE(port.ok());
  addresses_.push_back(absl::StrCat("127.0.0.1:", port.ok() ? *port : 0));
  coordinators_.emplace_back();
  StartCoordinator(addresses_.size() - 1);
  return addresses_.size() - 1;
}

void Cluster::StartCoordinator(size_t i) {
  std::vector<std::string> flags = {"--database_url=" + url_, "--grpc_address=" + addresses_[i],
                                    "--lease_timeout_s=3", "--heartbeat_interval_s=0.5",
                                    "--db_pool_size=6", tokens_.BootstrapFlag(),
                                    // The pools the tests' CPU workers stand in for (work may
                                    // be queued for them before a worker has registered), and
                                    // the helm chart's default pool, which has no worker here.
                                    "--gpu_pools=cpu,typeA,typeB,H100"};
  if (!gateway_address_.empty()) {
    flags.push_back("--gateway_address=" + gateway_address_);
    flags.push_back("--gateway_token_file=" + gateway_token_file_);
  }
  flags.insert(flags.end(), coordinator_flags_.begin(), coordinator_flags_.end());
  auto c = ServiceProcess::Start(BuiltBinary("coordinator/kforge-coordinator"), flags);
  ASSERT_TRUE(c.ok()) << c.status();
  coordinators_[i] = std::move(c).value();
}

ServiceProcess* Cluster::StartWorkerOf(const std::vector<size_t>& order,
                                       const std::string& gpu_type) {
  std::vector<std::string> hosts;
  for (size_t i : order) hosts.push_back(addresses_[i]);
  // The certificate names 127.0.0.1 and localhost, not the list.
  return StartWorkerAt("ipv4:" + absl::StrJoin(hosts, ","), gpu_type, 1,
                       {"--tls_server_name=localhost"});
}

ServiceProcess* Cluster::StartWorker(const std::string& gpu_type, int slots,
                                     const std::vector<std::string>& extra) {
  return StartWorkerAt(addresses_[0], gpu_type, slots, extra);
}

ServiceProcess* Cluster::StartWorkerAt(const std::string& coordinator,
                                       const std::string& gpu_type, int slots,
                                       const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--coordinator=" + coordinator, "--gpu_type=" + gpu_type,
                                   "--device=cpu", "--slots=" + std::to_string(slots),
                                   "--cache_dir=/tmp/kforge-test-cache",
                                   "--token_file=" + worker_token_file_};
  args.insert(args.end(), extra.begin(), extra.end());
  auto w = ServiceProcess::Start(BuiltBinary("gpu_worker/kforge-worker"), args);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return nullptr;
  workers_.push_back(std::move(w).value());
  return workers_.back().get();
}

std::unique_ptr<v1::JobService::Stub> Cluster::Stub(size_t i) {
  return v1::JobService::NewStub(MakeChannel(addresses_[i], {tester_token_, TestPki::Shared().Client()}));
}

std::unique_ptr<v1::JobService::Stub> Cluster::StubWithToken(const std::string& token) {
  return v1::JobService::NewStub(MakeChannel(addresses_[0], {token, TestPki::Shared().Client()}));
}

std::unique_ptr<v1::AdminService::Stub> Cluster::Admin() {
  return v1::AdminService::NewStub(
      MakeChannel(addresses_[0], {tokens_.admin(), TestPki::Shared().Client()}));
}

v1::CreateTokenResponse Cluster::CreateToken(const std::string& principal,
                                             const std::string& tenant,
                                             const std::vector<std::string>& roles) {
  return tokens_.Create(addresses_[0], principal, tenant, roles);
}

std::string Cluster::SubmitTask(const std::string& relative, const v1::TaskOptions& options) {
  v1::SubmitTaskRequest req;
  req.set_name(relative);
  req.set_source(ReadSourceFile(relative));
  *req.mutable_options() = options;
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

std::chrono::system_clock::time_point In(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

grpc::Status ReadBatch(v1::JobService::Stub& stub, const v1::EvaluateBatchRequest& req,
                       std::vector<v1::EvaluationRecord>* out, std::string* batch_id,
                       double limit_s) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(limit_s));
  auto reader = stub.EvaluateBatch(&ctx, req);
  reader->WaitForInitialMetadata();
  auto md = ctx.GetServerInitialMetadata();
  auto it = md.find("kforge-batch-id");
  if (it != md.end() && batch_id) *batch_id = std::string(it->second.data(), it->second.size());
  v1::EvaluationRecord rec;
  while (reader->Read(&rec)) out->push_back(rec);
  return reader->Finish();
}

std::string SubmitJob(v1::JobService::Stub& stub, const v1::SubmitJobRequest& req) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(20));
  v1::SubmitJobResponse resp;
  grpc::Status s = stub.SubmitJob(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp.job_id();
}

std::vector<v1::JobEvent> WatchJob(v1::JobService::Stub& stub, const std::string& job_id,
                                   double limit_s) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(limit_s));
  v1::WatchJobRequest req;
  req.set_job_id(job_id);
  auto reader = stub.WatchJob(&ctx, req);
  std::vector<v1::JobEvent> events;
  v1::JobEvent ev;
  while (reader->Read(&ev)) events.push_back(ev);
  grpc::Status s = reader->Finish();
  EXPECT_TRUE(s.ok()) << s.error_message();
  return events;
}

v1::Job GetJob(v1::JobService::Stub& stub, const std::string& job_id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(20));
  v1::GetJobRequest req;
  req.set_job_id(job_id);
  v1::Job job;
  grpc::Status s = stub.GetJob(&ctx, req, &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return job;
}

void ExpectJobDidNothingTwice(Cluster& cluster, const std::string& job_id) {
  auto count = [&](const std::string& sql) { return cluster.Query(sql).Get(0, 0); };
  EXPECT_EQ(count("SELECT count(*) FROM (SELECT candidate_id, gpu_type FROM evaluations "
                  "WHERE job_id = '" +
                  job_id + "' GROUP BY 1, 2 HAVING count(*) > 1) d"),
            "0");
  EXPECT_EQ(count("SELECT count(*) FROM llm_calls WHERE job_id = '" + job_id + "'"),
            count("SELECT count(DISTINCT id) FROM ("
                  "  SELECT p->>'llm_call_id' AS id FROM job_steps s, "
                  "    jsonb_array_elements(s.payload->'proposals') p "
                  "  WHERE s.kind = 'generate' AND s.job_id = '" +
                  job_id +
                  "' "
                  "  UNION ALL SELECT payload->>'llm_call_id' FROM job_steps "
                  "  WHERE kind = 'ideas' AND job_id = '" +
                  job_id + "') ids"));
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
