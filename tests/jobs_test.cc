// Optimization jobs end to end, as users run them: a real PostgreSQL, the coordinator, the
// gateway with its offline proposer, CPU-mode workers running kforge-eval in the sandbox, all
// real processes on loopback. The seed candidates are the examples' host-only candidates with
// tuning knobs, so the whole loop runs without a GPU or an LLM.
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kforge/v1/jobs.grpc.pb.h"
#include "tests/cluster.h"
#include "tests/loopback.h"
#include "tests/pg_harness.h"

namespace kforge {
namespace {

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

std::string Submit(Cluster& cluster, const v1::SubmitJobRequest& req) {
  return SubmitJob(*cluster.Stub(), req);
}

std::vector<v1::JobEvent> Watch(Cluster& cluster, const std::string& job_id, double limit_s) {
  return WatchJob(*cluster.Stub(), job_id, limit_s);
}

v1::Job GetJob(Cluster& cluster, const std::string& job_id) {
  return kforge::GetJob(*cluster.Stub(), job_id);
}

// Watches the job to its end, which must be success, and reads it back into *job.
void WatchToSuccess(Cluster& cluster, const std::string& job_id, v1::Job* job) {
  std::vector<v1::JobEvent> events = Watch(cluster, job_id, 600);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished(), v1::JOB_STATE_SUCCEEDED);
  *job = GetJob(cluster, job_id);
  EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->error();
}

std::string Count(Cluster& cluster, const std::string& sql) { return cluster.Query(sql).Get(0, 0); }

TEST(JobsTest, JobRunsToItsBudgetStreamsEventsAndExportsRollouts) {
  Cluster cluster("jobs_run", /*gateway=*/true);
  ASSERT_NE(cluster.StartWorker("cpu", 2), nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  std::string job_id = Submit(cluster, ReluJobRequest(task, 2, 42));
  ASSERT_FALSE(job_id.empty());

  std::vector<v1::JobEvent> events = Watch(cluster, job_id, 600);
  std::vector<uint32_t> rounds;
  int results = 0, generated = 0, bests = 0;
  for (const auto& ev : events) {
    if (ev.has_round_started()) rounds.push_back(ev.round_started());
    if (ev.has_result()) ++results;
    if (ev.has_candidates_generated()) generated += static_cast<int>(ev.candidates_generated());
    if (ev.has_new_best()) {
      ++bests;
      EXPECT_EQ(ev.new_best().speedup_clock(), "call");
      EXPECT_DOUBLE_EQ(ev.new_best().speedup_call(), ev.new_best().speedup());
    }
  }
  EXPECT_EQ(rounds, (std::vector<uint32_t>{0, 1, 2}));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_GE(bests, 1) << "host-only candidates are correct on the CPU";

  v1::Job job = GetJob(cluster, job_id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  EXPECT_EQ(job.rounds_done(), 2u);
  EXPECT_EQ(job.stop_reason(), "max_rounds");
  EXPECT_GT(job.candidates_generated(), 0u);
  EXPECT_EQ(static_cast<int>(job.candidates_generated()), generated);
  EXPECT_EQ(job.candidates_evaluated(), job.candidates_generated() + 1);  // + the seed
  EXPECT_EQ(results, static_cast<int>(job.candidates_evaluated()));
  ASSERT_EQ(job.best_size(), 1);
  EXPECT_EQ(job.best(0).gpu_type(), "cpu");
  EXPECT_GT(job.best(0).speedup(), 0);
  EXPECT_EQ(job.best(0).speedup_clock(), "call");
  ExpectJobDidNothingTwice(cluster, job_id);
  // Every generated candidate descends from the exemplars it was shown.
  EXPECT_EQ(Count(cluster,
                  "SELECT count(*) FROM job_candidates WHERE round > 0 AND "
                  "cardinality(parent_ids) = 0 AND job_id = '" +
                      job_id + "'"),
            "0");

  // The best kernels come back with their sources.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(20));
    v1::BestCandidatesRequest req;
    req.set_job_id(job_id);
    req.set_limit(3);
    v1::BestCandidatesResponse resp;
    ASSERT_TRUE(cluster.Stub()->GetBestCandidates(&ctx, req, &resp).ok());
    ASSERT_GE(resp.best_size(), 1);
    EXPECT_NE(resp.sources().at(resp.best(0).candidate_id()).find("CHUNKS ="), std::string::npos);
    // CPU mode: the call clock makes the speedup, and the device clock is not measured.
    for (const v1::BestCandidate& b : resp.best()) {
      EXPECT_EQ(b.speedup_clock(), "call");
      ASSERT_TRUE(b.has_speedup_call());
      EXPECT_DOUBLE_EQ(b.speedup_call(), b.speedup());
      EXPECT_FALSE(b.has_speedup_device());
    }
  }
  // Rollouts: one per completion and GPU type, with verdicts and clipped rewards.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(20));
    v1::ExportRolloutsRequest req;
    req.set_job_id(job_id);
    auto stub = cluster.Stub();
    auto reader = stub->ExportRollouts(&ctx, req);
    v1::Rollout r;
    int n = 0;
    std::set<std::string> ids;
    while (reader->Read(&r)) {
      ++n;
      EXPECT_LE(std::abs(r.reward()), 1.5);
      EXPECT_FALSE(r.llm_call_id().empty());
      if (!r.candidate_id().empty()) {
        ids.insert(r.candidate_id());
        EXPECT_NE(r.verdict(), v1::VERDICT_UNSPECIFIED);
        EXPECT_EQ(r.raw_reward(), r.has_speedup() ? r.speedup() : 0);
        if (r.has_speedup()) {  // the reward's clock
          EXPECT_EQ(r.speedup_clock(), "call");
          ASSERT_TRUE(r.has_speedup_call());
          EXPECT_DOUBLE_EQ(r.speedup_call(), r.speedup());
          EXPECT_FALSE(r.has_speedup_device());
        }
      }
    }
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_GE(n, generated);
    EXPECT_EQ(static_cast<int>(ids.size()), generated);
  }
  // The trajectory: every evaluation in finishing order, the best so far never falling.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(20));
    v1::JobTrajectoryRequest req;
    req.set_job_id(job_id);
    v1::JobTrajectoryResponse resp;
    ASSERT_TRUE(cluster.Stub()->GetJobTrajectory(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.points_size(), results);
    double best = 0;
    for (const auto& p : resp.points()) {
      EXPECT_GE(p.best_so_far(), best);
      best = p.best_so_far();
      if (p.has_speedup()) {
        EXPECT_GE(p.best_so_far(), p.speedup());
        EXPECT_EQ(p.speedup_clock(), "call");
        ASSERT_TRUE(p.has_speedup_call());
        EXPECT_DOUBLE_EQ(p.speedup_call(), p.speedup());
      }
    }
    EXPECT_DOUBLE_EQ(best, job.best(0).speedup());
    EXPECT_EQ(resp.points(0).round(), 0u);  // the seed finishes first
  }
  // The coordinator's /metrics count the job's rounds and candidates.
  {
    auto metrics = HttpGet(cluster.coordinator()->metrics_port(), "/metrics");
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    EXPECT_THAT(metrics->body,
                ::testing::HasSubstr("kforge_job_rounds_total{strategy=\"contrastive\"} 2"));
    EXPECT_THAT(metrics->body,
                ::testing::HasSubstr("kforge_job_candidates_total{strategy=\"contrastive\"} " +
                                     std::to_string(job.candidates_generated())));
    EXPECT_THAT(metrics->body,
                ::testing::HasSubstr("kforge_jobs_finished_total{reason=\"max_rounds\","
                                     "state=\"succeeded\"} 1"));
  }
  // ListJobs shows it.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(20));
    v1::ListJobsRequest req;
    req.set_task_id(task);
    v1::ListJobsResponse resp;
    ASSERT_TRUE(cluster.Stub()->ListJobs(&ctx, req, &resp).ok());
    ASSERT_EQ(resp.jobs_size(), 1);
    EXPECT_EQ(resp.jobs(0).job_id(), job_id);
  }
}

TEST(JobsTest, IslandsJobKeepsItsIslandsInTheJobState) {
  Cluster cluster("jobs_islands", /*gateway=*/true);
  ASSERT_NE(cluster.StartWorker("cpu", 2), nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  v1::SubmitJobRequest req = ReluJobRequest(task, 2, 42);
  req.set_strategy("islands");
  req.mutable_strategy_params()->clear();
  (*req.mutable_strategy_params())["islands"] = "2";
  (*req.mutable_strategy_params())["migration_interval"] = "2";
  std::string job_id = Submit(cluster, req);
  ASSERT_FALSE(job_id.empty());
  v1::Job job;
  ASSERT_NO_FATAL_FAILURE(WatchToSuccess(cluster, job_id, &job));
  EXPECT_EQ(job.rounds_done(), 2u);
  EXPECT_GT(job.candidates_generated(), 0u);
  // Two islands, each holding the seed and its own products; one migration, at round 2. The
  // gateway answered with the contrastive template: at least one call per island and round
  // (the offline proposer makes one per completion; what was new is another matter).
  EXPECT_EQ(Count(cluster, "SELECT jsonb_array_length(search_state->'strategy'->'islands') "
                           "FROM jobs WHERE job_id = '" + job_id + "'"),
            "2");
  EXPECT_EQ(Count(cluster, "SELECT search_state->'strategy'->>'migrations' FROM jobs"), "[2]");
  EXPECT_GE(std::stoi(Count(cluster, "SELECT count(*) FROM llm_calls WHERE job_id = '" +
                                         job_id + "'")),
            4);
  ExpectJobDidNothingTwice(cluster, job_id);
}

TEST(JobsTest, IdeaBranchingJobAsksForIdeasThenImplementsThem) {
  Cluster cluster("jobs_ideas", /*gateway=*/true);
  ASSERT_NE(cluster.StartWorker("cpu", 2), nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_add_scale.py");
  v1::SubmitJobRequest req = ReluJobRequest(task, 2, 42);
  req.clear_seed_candidates();
  req.add_seed_candidates(ReadSourceFile("examples/candidates/tiny_add_scale/torch_chunked.py"));
  req.set_strategy("idea_branching");
  req.clear_strategy_params();
  (*req.mutable_strategy_params())["ideas_per_round"] = "2";
  (*req.mutable_strategy_params())["implementations_per_idea"] = "1";
  std::string job_id = Submit(cluster, req);
  v1::Job job;
  ASSERT_NO_FATAL_FAILURE(WatchToSuccess(cluster, job_id, &job));
  EXPECT_EQ(job.strategy(), "idea_branching");
  // Each round: one ideas step, then one generate step per idea.
  EXPECT_EQ(Count(cluster, "SELECT count(*) FROM job_steps WHERE kind = 'ideas' AND job_id = '" +
                               job_id + "'"),
            "2");
  EXPECT_GE(std::stoi(Count(cluster,
                            "SELECT count(*) FROM job_candidates WHERE round > 0 AND "
                            "idea IS NOT NULL AND job_id = '" +
                                job_id + "'")),
            1);
  ExpectJobDidNothingTwice(cluster, job_id);
}

TEST(JobsTest, MalformedJobRequestsAreRefusedWithReasons) {
  Cluster cluster("jobs_invalid", /*gateway=*/true);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  auto code_of = [&](const v1::SubmitJobRequest& req) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(20));
    v1::SubmitJobResponse resp;
    return cluster.Stub()->SubmitJob(&ctx, req, &resp).error_code();
  };
  v1::SubmitJobRequest req = ReluJobRequest(task, 1, 42);
  req.set_task_id(std::string(64, 'a'));
  EXPECT_EQ(code_of(req), grpc::StatusCode::NOT_FOUND);
  req = ReluJobRequest(task, 1, 42);
  req.set_strategy("annealing");
  EXPECT_EQ(code_of(req), grpc::StatusCode::INVALID_ARGUMENT);
  req = ReluJobRequest(task, 1, 42);
  (*req.mutable_strategy_params())["exemplarz"] = "3";
  EXPECT_EQ(code_of(req), grpc::StatusCode::INVALID_ARGUMENT);
  req = ReluJobRequest(task, 1, 42);
  req.clear_gpu_types();
  EXPECT_EQ(code_of(req), grpc::StatusCode::INVALID_ARGUMENT);
  req = ReluJobRequest(task, 1, 42);
  req.mutable_llm()->set_provider("gpt-in-a-box");
  EXPECT_EQ(code_of(req), grpc::StatusCode::INVALID_ARGUMENT);

  for (const auto& [id, code] :
       {std::pair<std::string, grpc::StatusCode>{"not-a-uuid", grpc::StatusCode::INVALID_ARGUMENT},
        {"00000000-0000-0000-0000-000000000000", grpc::StatusCode::NOT_FOUND}}) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(20));
    v1::GetJobRequest get;
    get.set_job_id(id);
    v1::Job job;
    EXPECT_EQ(cluster.Stub()->GetJob(&ctx, get, &job).error_code(), code) << id;
  }
}

TEST(JobsTest, APermanentGatewayErrorFailsTheJobInsteadOfResumingIt) {
  // A provider that needs a key the gateway does not have answers FAILED_PRECONDITION: no
  // retry can change that, so the job fails with the gateway's reason (docs/jobs.md).
  Cluster cluster("jobs_no_key", /*gateway=*/true);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  v1::SubmitJobRequest req = ReluJobRequest(task, 1, 42);
  req.clear_seed_candidates();
  req.clear_gpu_types();
  req.add_gpu_types("any");
  req.mutable_llm()->set_provider("openai");
  req.mutable_llm()->set_model("gpt-4o");
  std::string id = Submit(cluster, req);
  std::vector<v1::JobEvent> events = Watch(cluster, id, 120);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(GetJob(cluster, id).error(),
              ::testing::StartsWith("LLM gateway: no API key for openai"));
  EXPECT_THAT(cluster.coordinator()->log(), ::testing::Not(::testing::HasSubstr("resuming")));
}

TEST(JobsTest, AJobWaitingForAPoolWithNoWorkerEndsAtItsWallTime) {
  Cluster cluster("jobs_wall_time", /*gateway=*/true);  // H100 is a pool with no worker here
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  v1::SubmitJobRequest req = ReluJobRequest(task, 5, 42);
  req.set_gpu_types(0, "H100");
  req.mutable_budget()->set_max_wall_s(2);
  std::string id = Submit(cluster, req);
  std::vector<v1::JobEvent> events = Watch(cluster, id, 60);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(GetJob(cluster, id).stop_reason(), "max_wall_time");
  EXPECT_EQ(cluster.Query("SELECT count(*) FROM eval_queue").Get(0, 0), "0");
}

TEST(JobsTest, CancelledJobStopsAndDropsItsQueuedEvaluations) {
  Cluster cluster("jobs_cancel", /*gateway=*/true);  // no worker: the seeds wait in the queue
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  std::string job_id = Submit(cluster, ReluJobRequest(task, 5, 42));
  ASSERT_TRUE(
      cluster.WaitFor("SELECT count(*) FROM evaluations WHERE state = 'queued' AND "
                      "job_id = '" +
                          job_id + "'",
                      "1"));
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(20));
    v1::CancelJobRequest req;
    req.set_job_id(job_id);
    v1::CancelJobResponse resp;
    ASSERT_TRUE(cluster.Stub()->CancelJob(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.state(), v1::JOB_STATE_CANCELLED);
  }
  EXPECT_EQ(Count(cluster, "SELECT count(*) FROM evaluations WHERE job_id = '" + job_id + "'"),
            "0");
  std::vector<v1::JobEvent> events = Watch(cluster, job_id, 60);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished(), v1::JOB_STATE_CANCELLED);
  // A worker arriving now finds nothing of the job, and the job does not move on.
  ASSERT_NE(cluster.StartWorker("cpu"), nullptr);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  v1::Job job = GetJob(cluster, job_id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(job.stop_reason(), "cancelled");
  EXPECT_EQ(job.rounds_done(), 0u);
  EXPECT_EQ(Count(cluster,
                  "SELECT count(*) FROM job_steps WHERE round > 0 AND job_id = '" + job_id + "'"),
            "0");
}

TEST(JobsTest, CoordinatorKilledMidJobResumesFromPostgresWithoutRepeatingWork) {
  Cluster cluster("jobs_resume", /*gateway=*/true);
  ASSERT_NE(cluster.StartWorker("cpu", 2), nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  std::string job_id = Submit(cluster, ReluJobRequest(task, 3, 42));
  // Kill it once round 1's candidates are queued, before they are measured.
  ASSERT_TRUE(
      cluster.WaitFor("SELECT count(*) FROM job_steps WHERE kind = 'evaluate' AND "
                      "round = 1 AND job_id = '" +
                          job_id + "'",
                      "1", 300));
  cluster.KillCoordinator();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  cluster.StartCoordinator();

  v1::Job job;
  ASSERT_NO_FATAL_FAILURE(WatchToSuccess(cluster, job_id, &job));
  EXPECT_EQ(job.rounds_done(), 3u);
  EXPECT_EQ(job.candidates_evaluated(), job.candidates_generated() + 1);
  ExpectJobDidNothingTwice(cluster, job_id);
  // One batch per round that brought new candidates (round 0: the seed).
  EXPECT_EQ(Count(cluster, "SELECT count(*) FROM job_steps WHERE kind = 'evaluate' AND job_id = '" +
                               job_id + "'"),
            Count(cluster, "SELECT count(DISTINCT round) FROM job_candidates WHERE job_id = '" +
                               job_id + "'"));
}

}  // namespace
}  // namespace kforge
