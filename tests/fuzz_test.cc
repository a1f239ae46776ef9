// Malformed and mutated messages against every RPC of a running coordinator and gateway, for a
// bounded number of calls (a fixed seed, so a failure replays): random bytes, valid requests
// with bytes flipped, truncated or extended, and hand-made bad values (strings that are not
// UTF-8, oversized sources, huge repeated fields, negative, NaN and absurd budgets). Every call
// must end with a status that has a message, both services must keep serving, and what is
// stored may change only by calls that were answered OK.
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"

#include "common/channel.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kforge/v1/admin.pb.h"
#include "kforge/v1/gateway.pb.h"
#include "kforge/v1/jobs.pb.h"
#include "kforge/v1/worker.pb.h"
#include "tests/cluster.h"
#include "tests/pg_harness.h"
#include "tests/test_pki.h"

namespace kforge {
namespace {

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

constexpr int kMutatedCallsPerMethod = 100;

struct Outcome {
  grpc::Status status;
  std::vector<std::string> responses;
  std::string batch_id;  // the kforge-batch-id initial metadata, if any
};

// One call of `method` with `payload` as its only request message, whatever the method's
// kind (unary and streaming calls are the same on the wire).
Outcome RawCall(grpc::GenericStub& stub, const std::string& method, const std::string& payload) {
  Outcome out;
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
  auto call = stub.PrepareCall(&ctx, method, &cq);
  void* tag = nullptr;
  bool ok = false;
  auto wait = [&] { return cq.Next(&tag, &ok) && ok; };
  call->StartCall(nullptr);
  if (wait()) {
    grpc::Slice slice(payload);
    grpc::ByteBuffer request(&slice, 1);
    call->Write(request, nullptr);
    if (wait()) {
      call->WritesDone(nullptr);
      wait();
    }
    bool ended = false;
    for (int n = 0; n < 50 && !ended; ++n) {
      grpc::ByteBuffer response;
      call->Read(&response, nullptr);
      ended = !wait();
      if (ended) break;
      grpc::Slice joined;
      (void)response.DumpToSingleSlice(&joined);
      out.responses.emplace_back(reinterpret_cast<const char*>(joined.begin()), joined.size());
    }
    if (!ended) ctx.TryCancel();  // a stream that would go on (a watched job) ends here
  }
  call->Finish(&out.status, nullptr);
  cq.Next(&tag, &ok);
  auto md = ctx.GetServerInitialMetadata();
  if (auto it = md.find("kforge-batch-id"); it != md.end()) {
    out.batch_id.assign(it->second.data(), it->second.size());
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  return out;
}

std::string Mutate(std::mt19937_64& rng, const std::string& seed) {
  std::string s = seed;
  switch (rng() % 4) {
    case 0: {  // random bytes
      s.resize(rng() % 512);
      for (char& c : s) c = static_cast<char>(rng());
      break;
    }
    case 1:  // bytes flipped
      for (int i = 0, n = 1 + static_cast<int>(rng() % 8); i < n && !s.empty(); ++i) {
        s[rng() % s.size()] = static_cast<char>(rng());
      }
      break;
    case 2:  // truncated
      s.resize(s.empty() ? 0 : rng() % s.size());
      break;
    default:  // extended
      for (int i = 0, n = 1 + static_cast<int>(rng() % 64); i < n; ++i) {
        s.push_back(static_cast<char>(rng()));
      }
  }
  return s;
}

std::string NotUtf8() { return std::string("caf\xc3(\xff\xfe", 7); }

TEST(FuzzTest, EveryRpcAnswersBadInputWithAReasonAndNothingChangesButByValidCalls) {
  Cluster cluster("fuzz", /*gateway=*/true);
  const std::string task_source = ReadSourceFile("examples/tasks/tiny/tiny_relu.py");
  const std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  const std::string job =
      SubmitJob(*cluster.Stub(), [&] {
        v1::SubmitJobRequest r = ReluJobRequest(task, 1, 3);
        r.set_gpu_types(0, "any");
        return r;
      }());
  ASSERT_FALSE(job.empty());
  // One token with every role, so that every RPC gets past authorization to its validation.
  const std::string token = cluster
                                .CreateToken("fuzzer", "default",
                                             {"researcher", "trainer", "operator", "admin",
                                              "worker"})
                                .token();
  auto counts = [&] {
    return cluster
        .Query("SELECT (SELECT count(*) FROM tasks) || '/' || (SELECT count(*) FROM jobs) || '/' "
               "|| (SELECT count(*) FROM batches WHERE job_id IS NULL) || '/' || "
               "(SELECT count(*) FROM api_tokens) || '/' || (SELECT count(*) FROM workers)")
        .Get(0, 0);
  };
  const std::string before = counts();

  // Valid requests to mutate, per method.
  std::vector<std::pair<std::string, std::string>> seeds;
  auto add = [&](const std::string& method, const google::protobuf::Message& m) {
    seeds.emplace_back(method, m.SerializeAsString());
  };
  v1::SubmitTaskRequest st;
  st.set_name("fuzz");
  st.set_source(task_source);
  add("/kforge.v1.JobService/SubmitTask", st);
  add("/kforge.v1.JobService/SubmitJob", ReluJobRequest(task, 1, 3));
  v1::GetJobRequest gj;
  gj.set_job_id(job);
  add("/kforge.v1.JobService/GetJob", gj);
  v1::ListJobsRequest lj;
  lj.set_task_id(task);
  add("/kforge.v1.JobService/ListJobs", lj);
  v1::CancelJobRequest cj;
  cj.set_job_id("00000000-0000-0000-0000-000000000000");
  add("/kforge.v1.JobService/CancelJob", cj);
  v1::WatchJobRequest wj;
  wj.set_job_id(job);
  add("/kforge.v1.JobService/WatchJob", wj);
  v1::EvaluateBatchRequest eb;
  eb.set_task_id(task);
  eb.add_candidates()->set_source("class ModelNew: pass\n");
  eb.add_gpu_types("any");
  add("/kforge.v1.JobService/EvaluateBatch", eb);
  v1::ResultsQuery rq;
  rq.set_task_id(task);
  add("/kforge.v1.JobService/QueryResults", rq);
  v1::BestCandidatesRequest bc;
  bc.set_task_id(task);
  add("/kforge.v1.JobService/GetBestCandidates", bc);
  add("/kforge.v1.JobService/ListWorkers", v1::ListWorkersRequest());
  v1::DrainWorkerRequest dw;
  dw.set_worker_id("00000000-0000-0000-0000-000000000000");
  add("/kforge.v1.JobService/DrainWorker", dw);
  add("/kforge.v1.JobService/UndrainWorker", dw);
  v1::JobTrajectoryRequest jt;
  jt.set_job_id(job);
  add("/kforge.v1.JobService/GetJobTrajectory", jt);
  v1::ExportRolloutsRequest er;
  er.set_job_id(job);
  add("/kforge.v1.JobService/ExportRollouts", er);
  v1::CreateTokenRequest ct;
  ct.set_principal("fuzzed");
  ct.add_roles("researcher");
  add("/kforge.v1.AdminService/CreateToken", ct);
  v1::RevokeTokenRequest rt;
  rt.set_token_id("00000000-0000-0000-0000-000000000000");
  add("/kforge.v1.AdminService/RevokeToken", rt);
  add("/kforge.v1.AdminService/ListTokens", v1::ListTokensRequest());
  add("/kforge.v1.AdminService/QueryAudit", v1::QueryAuditRequest());
  v1::RegisterRequest reg;
  reg.mutable_facts()->set_hostname("fuzz");
  reg.mutable_facts()->set_gpu_type("cpu");
  reg.mutable_facts()->set_slots(1);
  add("/kforge.v1.WorkerService/Register", reg);
  v1::WorkerMessage hello;
  hello.mutable_hello()->set_worker_id("00000000-0000-0000-0000-000000000000");
  add("/kforge.v1.WorkerService/Connect", hello);
  v1::GenerateRequest gen;
  gen.set_task_source(task_source);
  gen.set_num_candidates(1);
  add("/kforge.v1.GatewayService/Generate", gen);
  v1::ProposeIdeasRequest pi;
  pi.set_task_source(task_source);
  pi.set_num_ideas(1);
  add("/kforge.v1.GatewayService/ProposeIdeas", pi);
  v1::LlmSettings ls;
  ls.set_provider("openai");
  ls.set_base_url("http://127.0.0.1:9/v1");
  add("/kforge.v1.GatewayService/CheckLlmSettings", ls);

  // Hand-made bad values.
  std::vector<std::pair<std::string, std::string>> bad;
  {
    v1::SubmitTaskRequest t = st;
    t.set_name(NotUtf8());
    bad.emplace_back("/kforge.v1.JobService/SubmitTask", t.SerializeAsString());
    t = st;
    t.set_source(std::string(3 << 20, '#'));
    bad.emplace_back("/kforge.v1.JobService/SubmitTask", t.SerializeAsString());
    v1::SubmitJobRequest j = ReluJobRequest(task, 1, 3);
    j.mutable_budget()->set_max_wall_s(-1);
    bad.emplace_back("/kforge.v1.JobService/SubmitJob", j.SerializeAsString());
    j.mutable_budget()->set_max_wall_s(std::numeric_limits<double>::quiet_NaN());
    bad.emplace_back("/kforge.v1.JobService/SubmitJob", j.SerializeAsString());
    j = ReluJobRequest(task, 1, 3);
    j.mutable_budget()->set_target_speedup(1e308 * 10);
    bad.emplace_back("/kforge.v1.JobService/SubmitJob", j.SerializeAsString());
    j = ReluJobRequest(task, 1, 3);
    for (int i = 0; i < 100000; ++i) j.add_gpu_types("H" + std::to_string(i));
    bad.emplace_back("/kforge.v1.JobService/SubmitJob", j.SerializeAsString());
    v1::EvaluateBatchRequest b = eb;
    for (int i = 0; i < 20000; ++i) b.add_candidates()->set_source("x");
    bad.emplace_back("/kforge.v1.JobService/EvaluateBatch", b.SerializeAsString());
    b = eb;
    b.set_priority(4000000000u);
    bad.emplace_back("/kforge.v1.JobService/EvaluateBatch", b.SerializeAsString());
    b = eb;
    b.set_batch_id(NotUtf8());
    bad.emplace_back("/kforge.v1.JobService/EvaluateBatch", b.SerializeAsString());
    v1::CreateTokenRequest c = ct;
    c.set_ttl_s(-5);
    bad.emplace_back("/kforge.v1.AdminService/CreateToken", c.SerializeAsString());
    v1::RegisterRequest r = reg;
    r.mutable_facts()->set_slots(1000000);
    bad.emplace_back("/kforge.v1.WorkerService/Register", r.SerializeAsString());
    v1::GenerateRequest g = gen;
    g.set_num_candidates(1000000000);
    bad.emplace_back("/kforge.v1.GatewayService/Generate", g.SerializeAsString());
  }

  grpc::GenericStub coordinator(
      MakeChannel(cluster.coordinator_address(), {token, TestPki::Shared().Client()}));
  grpc::GenericStub gateway(
      MakeChannel(cluster.gateway()->grpc_address(), {"", TestPki::Shared().Client()}));
  std::mt19937_64 rng(20261201);
  int ok_tasks = 0, ok_jobs = 0, ok_tokens = 0, ok_workers = 0, calls = 0;
  std::set<std::string> batches;
  auto check = [&](const std::string& method, const std::string& payload) {
    grpc::GenericStub& stub = method.find("GatewayService") != std::string::npos ? gateway
                                                                                 : coordinator;
    Outcome o = RawCall(stub, method, payload);
    ++calls;
    if (!o.status.ok()) {
      EXPECT_FALSE(o.status.error_message().empty())
          << method << " answered " << o.status.error_code() << " without a message";
    }
    if (!o.batch_id.empty()) batches.insert(o.batch_id);
    if (!o.status.ok() || o.responses.empty()) return;
    if (method == "/kforge.v1.JobService/SubmitTask") {
      v1::SubmitTaskResponse r;
      if (r.ParseFromString(o.responses[0]) && r.created()) ++ok_tasks;
    } else if (method == "/kforge.v1.JobService/SubmitJob") {
      ++ok_jobs;
    } else if (method == "/kforge.v1.AdminService/CreateToken") {
      ++ok_tokens;
    } else if (method == "/kforge.v1.WorkerService/Register") {
      ++ok_workers;
    }
  };
  for (const auto& [method, payload] : bad) check(method, payload);
  for (const auto& [method, seed] : seeds) {
    for (int i = 0; i < kMutatedCallsPerMethod; ++i) check(method, Mutate(rng, seed));
  }

  EXPECT_EQ(HealthStatus(cluster.coordinator_address()).value_or("down"), "SERVING");
  EXPECT_EQ(HealthStatus(cluster.gateway()->grpc_address()).value_or("down"), "SERVING");
  // Nothing stored but by the calls answered OK (the job's batch is not a client's).
  std::vector<std::string> b = absl::StrSplit(before, '/');
  std::vector<std::string> a = absl::StrSplit(counts(), '/');
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(std::stoi(a[0]), std::stoi(b[0]) + ok_tasks) << "tasks";
  EXPECT_EQ(std::stoi(a[1]), std::stoi(b[1]) + ok_jobs) << "jobs";
  EXPECT_EQ(std::stoi(a[2]), std::stoi(b[2]) + static_cast<int>(batches.size())) << "batches";
  EXPECT_EQ(std::stoi(a[3]), std::stoi(b[3]) + ok_tokens) << "tokens";
  EXPECT_EQ(std::stoi(a[4]), std::stoi(b[4]) + ok_workers) << "workers";
  EXPECT_GT(calls, 2000);
}

}  // namespace
}  // namespace kforge
