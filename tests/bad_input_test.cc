// Bad input reaches a real coordinator (and PostgreSQL) and is refused with a message naming
// what is wrong, nothing stored: tasks that are not UTF-8 or do not parse, absurd task
// options and budgets, GPU types no pool serves, and a rogue worker's forged results.
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "common/base/sha256.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kforge/v1/jobs.grpc.pb.h"
#include "tests/cluster.h"
#include "tests/pg_harness.h"
#include "tests/rogue_worker.h"

namespace kforge {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

void SetDeadline(grpc::ClientContext& ctx, int seconds = 20) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

grpc::Status SubmitTask(v1::JobService::Stub& stub, const v1::SubmitTaskRequest& req) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::SubmitTaskResponse resp;
  return stub.SubmitTask(&ctx, req, &resp);
}

grpc::Status SubmitJob(v1::JobService::Stub& stub, const v1::SubmitJobRequest& req) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::SubmitJobResponse resp;
  return stub.SubmitJob(&ctx, req, &resp);
}

// The first status of an EvaluateBatch call that is refused before anything is queued.
grpc::Status RefusedBatch(v1::JobService::Stub& stub, const v1::EvaluateBatchRequest& req) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  auto reader = stub.EvaluateBatch(&ctx, req);
  v1::EvaluationRecord rec;
  while (reader->Read(&rec)) {
  }
  return reader->Finish();
}

std::string TaskSource() { return ReadSourceFile("examples/tasks/tiny/tiny_relu.py"); }

TEST(BadInputTest, TasksThatAreNotUtf8OrDoNotParseOrHaveAbsurdOptionsAreRefused) {
  Cluster cluster("bad_tasks");
  auto stub = cluster.Stub();
  v1::SubmitTaskRequest req;
  req.set_source(TaskSource() + "# \xff\xfe\n");
  grpc::Status s = SubmitTask(*stub, req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "task source is not valid UTF-8 (byte " +
                                   std::to_string(TaskSource().size() + 2) + ")");

  req.set_source(TaskSource() + "\ndef broken(:\n    pass\n");
  s = SubmitTask(*stub, req);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), StartsWith("task source does not parse as Python: line "));

  req.set_source(TaskSource());
  req.mutable_options()->set_atol(-1);
  EXPECT_EQ(SubmitTask(*stub, req).error_message(),
            "options.atol is -1; it must be 0 (the default) or within (0, 1]");
  req.mutable_options()->set_atol(0);
  req.mutable_options()->set_rtol(std::nan(""));
  EXPECT_EQ(SubmitTask(*stub, req).error_message(),
            "options.rtol is nan; it must be 0 (the default) or within (0, 1]");
  req.mutable_options()->set_rtol(0);
  req.mutable_options()->set_correctness_trials(4000000000u);
  EXPECT_EQ(SubmitTask(*stub, req).error_message(),
            "options.correctness_trials is 4000000000; at most 100");
  EXPECT_EQ(cluster.Query("SELECT count(*) FROM tasks").Get(0, 0), "0");
}

TEST(BadInputTest, CandidatesBudgetsAndUnservedGpuTypesAreRefused) {
  Cluster cluster("bad_requests");
  auto stub = cluster.Stub();
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");

  v1::EvaluateBatchRequest batch;
  batch.set_task_id(task);
  batch.add_candidates()->set_source("abc\xc3(");
  batch.add_gpu_types("any");
  grpc::Status s = RefusedBatch(*stub, batch);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "candidate 0 is not valid UTF-8 (byte 3)");

  batch.mutable_candidates(0)->set_source("class ModelNew: pass\n");
  batch.set_gpu_types(0, "H999");
  s = RefusedBatch(*stub, batch);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "no worker pool serves GPU type 'H999' (known: H100, any, cpu, typeA, typeB); the "
            "coordinator's --gpu_pools names pools that have no worker now");

  v1::SubmitJobRequest job = ReluJobRequest(task, 1, 1);
  job.set_gpu_types(0, "H999");
  EXPECT_THAT(SubmitJob(*stub, job).error_message(),
              StartsWith("no worker pool serves GPU type 'H999'"));
  job = ReluJobRequest(task, 1, 1);
  job.set_gpu_types(0, "any");
  job.mutable_budget()->set_max_wall_s(std::nan(""));
  EXPECT_EQ(SubmitJob(*stub, job).error_message(),
            "budget.max_wall_s must be within [0, 2592000] seconds (0: no limit)");
  job.mutable_budget()->set_max_wall_s(0);
  job.mutable_budget()->set_target_speedup(std::numeric_limits<double>::infinity());
  EXPECT_EQ(SubmitJob(*stub, job).error_message(),
            "budget.target_speedup must be finite and not negative (0: none)");
  job.mutable_budget()->set_target_speedup(0);
  job.mutable_llm()->set_temperature(std::nan(""));
  EXPECT_EQ(SubmitJob(*stub, job).error_message(), "llm.temperature must be within [0, 2]");

  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::GetJobRequest get;
  get.set_job_id("x' OR 1=1 --");
  v1::Job got;
  s = stub->GetJob(&ctx, get, &got);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "job_id 'x' OR 1=1 --' is not a UUID");

  PgResult counts = cluster.Query(
      "SELECT (SELECT count(*) FROM jobs) || '/' || (SELECT count(*) FROM evaluations)");
  EXPECT_EQ(counts.Get(0, 0), "0/0");
}

TEST(BadInputTest, ForgedResultsAreRefusedWithAReasonAndNothingIsStored) {
  Cluster cluster("rogue_results");
  // A worker with valid credentials that forges its results.
  RogueWorker rogue(cluster.coordinator()->grpc_address(), "cpu", cluster.worker_token());
  ASSERT_TRUE(rogue.registered().ok()) << rogue.registered().error_message();
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  auto stub = cluster.Stub();
  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  req.add_candidates()->set_source(ReadSourceFile("examples/candidates/tiny_relu/wrong.py"));
  req.add_gpu_types("cpu");
  grpc::ClientContext batch_ctx;
  SetDeadline(batch_ctx, 120);
  auto batch = stub->EvaluateBatch(&batch_ctx, req);
  batch->WaitForInitialMetadata();  // queued

  ASSERT_TRUE(rogue.Connect());
  std::string lease = rogue.TakeLease();
  ASSERT_FALSE(lease.empty());
  v1::EvalResult forged;  // "ok, speedup 1000" without evaluating anything
  forged.set_verdict(v1::VERDICT_OK);
  forged.set_speedup(1000);
  EXPECT_EQ(rogue.SendAndReadRefusal(lease, forged),
            "malformed result: reference.n is 0; an ok result has timed both programs");

  lease = rogue.TakeLease();  // the evaluation went back to the queue and came again
  ASSERT_FALSE(lease.empty());
  forged.set_speedup(std::numeric_limits<double>::quiet_NaN());
  for (v1::TimingStats* t : {forged.mutable_reference(), forged.mutable_candidate()}) {
    t->set_n(5);
    t->set_median_ms(1);
    t->set_min_ms(1);
    t->set_max_ms(1);
  }
  forged.mutable_correctness()->set_trials(5);
  forged.mutable_correctness()->set_trials_passed(5);
  EXPECT_EQ(rogue.SendAndReadRefusal(lease, forged),
            "malformed result: speedup is nan; it must be finite and positive");
  // The third lease is the last attempt; the rogue leaves without answering it, so the
  // evaluation ends as worker_lost, and none of the forgeries was ever stored.
  ASSERT_FALSE(rogue.TakeLease().empty());
  rogue.Close();
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM evaluations WHERE state = 'done'", "1"));
  PgResult rows = cluster.Query(
      "SELECT verdict || '/' || rule || '/' || attempts || '/' || "
      "  coalesce(speedup::text, 'no speedup') || '/' || coalesce(worker_id::text, 'no worker') "
      "FROM evaluations");
  EXPECT_EQ(rows.Get(0, 0), "runtime_error/worker_lost/3/no speedup/no worker");
  EXPECT_THAT(cluster.coordinator()->log(), HasSubstr("\"msg\":\"result refused\""));
  EXPECT_THAT(cluster.coordinator()->log(), Not(HasSubstr("result stored")));
  batch_ctx.TryCancel();
}

// Queues one evaluation of tiny_relu's `candidate` for "cpu" and returns its open stream
// (`ctx` keeps it).
std::unique_ptr<grpc::ClientReader<v1::EvaluationRecord>> QueueOnCpu(Cluster& cluster,
                                                                     v1::JobService::Stub& stub,
                                                                     grpc::ClientContext& ctx,
                                                                     const std::string& candidate) {
  v1::EvaluateBatchRequest req;
  req.set_task_id(cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py"));
  req.add_candidates()->set_source(ReadSourceFile(candidate));
  req.add_gpu_types("cpu");
  SetDeadline(ctx, 120);
  auto batch = stub.EvaluateBatch(&ctx, req);
  batch->WaitForInitialMetadata();  // queued
  return batch;
}

// Red team, session 29: a NUL byte in a result's string passed validation and PostgreSQL's
// jsonb refused it; the worker was never told and the evaluation was leased again and again.
// It is refused as malformed, and a result refused at every attempt ends the evaluation
// (rule result_refused) instead of going back to the queue forever.
TEST(BadInputTest, AResultWithANulByteIsRefusedAndTheEvaluationEndsAfterItsLastAttempt) {
  Cluster cluster("rogue_nul");
  RogueWorker rogue(cluster.coordinator()->grpc_address(), "cpu", cluster.worker_token());
  ASSERT_TRUE(rogue.registered().ok()) << rogue.registered().error_message();
  auto stub = cluster.Stub();
  grpc::ClientContext batch_ctx;
  auto batch = QueueOnCpu(cluster, *stub, batch_ctx, "examples/candidates/tiny_relu/wrong.py");
  ASSERT_TRUE(rogue.Connect());
  v1::EvalResult nul;
  nul.set_verdict(v1::VERDICT_RUNTIME_ERROR);
  nul.set_reason(std::string("raised \0 in forward", 20));
  for (int attempt = 1; attempt <= 3; ++attempt) {
    std::string lease = rogue.TakeLease();
    ASSERT_FALSE(lease.empty()) << "attempt " << attempt;
    EXPECT_EQ(rogue.SendAndReadRefusal(lease, nul),
              "malformed result: reason contains a NUL byte (byte 7)");
  }
  v1::EvaluationRecord rec;
  ASSERT_TRUE(batch->Read(&rec));
  EXPECT_EQ(rec.result().verdict(), v1::VERDICT_RUNTIME_ERROR);
  EXPECT_EQ(rec.result().rule(), "result_refused");
  EXPECT_EQ(rec.result().reason(),
            "result_refused: attempt 3 of 3 ended with a result the coordinator refused "
            "(malformed result: reason contains a NUL byte (byte 7)); not retried again");
  PgResult rows = cluster.Query(
      "SELECT state || '/' || attempts || '/' || coalesce(worker_id::text, 'no worker') || '/' "
      "  || (SELECT count(*) FROM leases) || '/' || (SELECT count(*) FROM eval_queue) "
      "FROM evaluations");
  EXPECT_EQ(rows.Get(0, 0), "done/3/no worker/0/0");
  EXPECT_THAT(cluster.coordinator()->log(), Not(HasSubstr("result not stored")));
  rogue.Close();
}

// Red team, session 29: a result naming another task or candidate (its SHA-256) than the
// leased evaluation's was stored as that evaluation's. It is refused as malformed; a result
// whose hashes match is stored (the worker's own failures may carry none: accepted too).
TEST(BadInputTest, AResultForAnotherTaskOrCandidateThanItsLeaseIsRefused) {
  Cluster cluster("rogue_hashes");
  RogueWorker rogue(cluster.coordinator()->grpc_address(), "cpu", cluster.worker_token());
  ASSERT_TRUE(rogue.registered().ok()) << rogue.registered().error_message();
  auto stub = cluster.Stub();
  grpc::ClientContext batch_ctx;
  auto batch = QueueOnCpu(cluster, *stub, batch_ctx, "examples/candidates/tiny_relu/wrong.py");
  ASSERT_TRUE(rogue.Connect());
  std::string lease = rogue.TakeLease();
  ASSERT_FALSE(lease.empty());
  const std::string task_sha = Sha256Hex(rogue.leased_request().task_source());
  const std::string cand_sha = Sha256Hex(rogue.leased_request().candidate_source());
  const std::string other = Sha256Hex("class ModelNew: pass  # a faster one\n");
  v1::EvalResult result;
  result.set_verdict(v1::VERDICT_COMPILE_ERROR);
  result.set_reason("does not build");
  result.set_task_sha256(task_sha);
  result.set_candidate_sha256(other);
  EXPECT_EQ(rogue.SendAndReadRefusal(lease, result), "malformed result: candidate_sha256 is " +
                                                         other + " but the leased candidate's is " +
                                                         cand_sha);
  lease = rogue.TakeLease();
  ASSERT_FALSE(lease.empty());
  result.set_task_sha256(other);
  result.set_candidate_sha256(cand_sha);
  EXPECT_EQ(rogue.SendAndReadRefusal(lease, result),
            "malformed result: task_sha256 is " + other + " but the leased task's is " + task_sha);
  EXPECT_EQ(cluster.Query("SELECT count(*) FROM evaluations WHERE state = 'done'").Get(0, 0), "0");
  lease = rogue.TakeLease();
  ASSERT_FALSE(lease.empty());
  result.set_task_sha256(task_sha);
  ASSERT_TRUE(rogue.Send(lease, result));
  v1::EvaluationRecord rec;
  ASSERT_TRUE(batch->Read(&rec));
  EXPECT_EQ(rec.result().verdict(), v1::VERDICT_COMPILE_ERROR);
  EXPECT_EQ(rec.result().candidate_sha256(), cand_sha);
  EXPECT_EQ(rec.attempts(), 3u);  // both refusals counted
  rogue.Close();
}

// Red team, session 29: a worker registered a 200 kB gpu_type; every registered type is
// listed in the "no worker pool serves" error, which then passed gRPC's limit
// (RESOURCE_EXHAUSTED for every tenant), and labelled the metrics. Registration takes short
// identifiers only: what workers derive from device names ("H200", "RTX3090"), "cpu", pool
// names.
TEST(BadInputTest, AWorkerMustRegisterAShortGpuTypeAndHostname) {
  Cluster cluster("rogue_register");
  const std::string address = cluster.coordinator()->grpc_address();
  const std::string token = cluster.worker_token();
  RogueWorker huge(address, std::string(200000, 'H'), token);
  EXPECT_EQ(huge.registered().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(huge.registered().error_message(),
            "facts.gpu_type '" + std::string(64, 'H') +
                "...' (200000 bytes) must be 1..64 characters of A-Z, a-z, 0-9, '.', '_' and "
                "'-'");
  for (const std::string& bad : {std::string("NVIDIA H200"), std::string("H200\n"),
                                 std::string("a/b"), std::string(65, 'x')}) {
    RogueWorker w(address, bad, token);
    EXPECT_EQ(w.registered().error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
  }
  for (const std::string& bad :
       {std::string(256, 'h'), std::string("two words"), std::string("tab\there")}) {
    RogueWorker w(address, "cpu", token, bad);
    EXPECT_EQ(w.registered().error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_THAT(w.registered().error_message(), StartsWith("facts.hostname '"));
  }
  for (const char* good : {"H200", "RTX3090", "cpu", "cli-test-gpu", "gpu.v2_x"}) {
    RogueWorker w(address, good, token, "node-7.pool.svc.cluster.local");
    EXPECT_TRUE(w.registered().ok()) << good << ": " << w.registered().error_message();
  }
  EXPECT_TRUE(RogueWorker(address, "H100", token, std::string(255, 'h')).registered().ok());

  v1::EvaluateBatchRequest batch;
  batch.set_task_id(cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py"));
  batch.add_candidates()->set_source("class ModelNew: pass\n");
  batch.add_gpu_types("H999");
  grpc::Status s = RefusedBatch(*cluster.Stub(), batch);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "no worker pool serves GPU type 'H999' (known: H100, H200, RTX3090, any, "
            "cli-test-gpu, cpu, gpu.v2_x, typeA, typeB); the coordinator's --gpu_pools names "
            "pools that have no worker now");
  EXPECT_EQ(cluster.Query("SELECT count(*) FROM workers").Get(0, 0), "6");

  // One registered before the limits (its row as it was stored then) holds no stream: its
  // type would become a metrics label and a pool name (the review of session 29).
  RogueWorker old(address, "H200", token);
  ASSERT_TRUE(old.registered().ok());
  cluster.Query("UPDATE workers SET gpu_type = repeat('H', 200000) WHERE worker_id = '" +
                old.worker_id() + "'");
  old.Connect();
  grpc::Status ended = old.Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(ended.error_message(), HasSubstr("register again"));
}

}  // namespace
}  // namespace kforge
