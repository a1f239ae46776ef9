// Several coordinators over one PostgreSQL, as the Helm chart runs them (a Deployment with
// replicas behind one Service): two real coordinators, CPU workers on both, a batch and an
// optimization job spread over them, and kill -9 of one mid-batch. Every result is stored once,
// the job finishes, the batch's client and the workers re-attach to the survivor.
//
// The workers' channels list both coordinators (gRPC pick_first over `ipv4:A,B`), which is how a
// Service behaves for them: a broken stream reconnects to whichever coordinator answers.
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kforge/v1/jobs.grpc.pb.h"
#include "tests/cluster.h"
#include "tests/pg_harness.h"

namespace kforge {
namespace {

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

constexpr int kBatchSize = 8;

// The value of `key` in every JSON log line of `log` (from byte `from` on) whose msg is `msg`.
std::vector<std::string> LogValues(const std::string& log, const std::string& msg,
                                   const std::string& key, size_t from = 0) {
  std::vector<std::string> values;
  std::istringstream lines(log.substr(std::min(from, log.size())));
  const std::string want_msg = "\"msg\":\"" + msg + "\"", marker = "\"" + key + "\":\"";
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find(marker);
    if (line.find(want_msg) == std::string::npos || at == std::string::npos) continue;
    at += marker.size();
    values.push_back(line.substr(at, line.find('"', at) - at));
  }
  return values;
}

// A correct candidate whose build takes 3 s, with its own content hash.
std::string SlowCandidate(int i) {
  return ReadSourceFile("tests/distributed/slow_relu.py") + "\n# two coordinators " +
         std::to_string(i) + "\n";
}

bool WaitForLog(ServiceProcess& service, const std::string& text, double limit_s) {
  for (int i = 0; i < limit_s * 10; ++i) {
    if (service.log().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TEST(CoordinatorsTest, TwoCoordinatorsShareTheWorkAndTheSurvivorFinishesWhatTheKilledOneServed) {
  Cluster cluster("two_coordinators", /*gateway=*/true);
  const size_t a = 0;
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  // The job is submitted while only A runs, so A drives it: killing A must hand it to B. Its
  // seed is the slow candidate (its proposals too, mutations of it), so that it is still running
  // when A is killed (with tiny_relu's quick seed it once finished first, on an idle machine,
  // and there was nothing left to take over).
  v1::SubmitJobRequest slow_job = ReluJobRequest(task, 6, 11);
  slow_job.set_seed_candidates(0, SlowCandidate(-1));
  std::string job_id = SubmitJob(*cluster.Stub(a), slow_job);
  ASSERT_FALSE(job_id.empty());
  ASSERT_TRUE(WaitForLog(*cluster.coordinator(a), "\"job running\"", 30))
      << cluster.coordinator(a)->log();
  const size_t b = cluster.AddCoordinator();

  std::vector<ServiceProcess*> workers_of_a, workers_of_b;
  for (int i = 0; i < 2; ++i) {
    workers_of_a.push_back(cluster.StartWorkerOf({a, b}, "cpu"));
    workers_of_b.push_back(cluster.StartWorkerOf({b, a}, "cpu"));
    ASSERT_NE(workers_of_a.back(), nullptr);
    ASSERT_NE(workers_of_b.back(), nullptr);
  }

  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  for (int i = 0; i < kBatchSize; ++i) req.add_candidates()->set_source(SlowCandidate(i));
  req.add_gpu_types("cpu");
  std::vector<v1::EvaluationRecord> first;
  std::string batch_id;
  grpc::Status broken;
  auto stub_a = cluster.Stub(a);
  std::thread client([&] { broken = ReadBatch(*stub_a, req, &first, &batch_id); });

  // Every worker runs an evaluation, through both coordinators, before A dies.
  ASSERT_TRUE(cluster.WaitFor("SELECT count(DISTINCT worker_id) FROM leases", "4", 120));
  ASSERT_TRUE(WaitForLog(*cluster.coordinator(b), "\"lease granted\"", 30));
  const std::vector<std::string> granted_by_a =
      LogValues(cluster.coordinator(a)->log(), "lease granted", "lease_id");
  ASSERT_FALSE(granted_by_a.empty());
  const size_t b_log_at_kill = cluster.coordinator(b)->log().size();
  const v1::JobState at_kill = GetJob(*cluster.Stub(a), job_id).state();
  cluster.KillCoordinator(a);
  client.join();
  ASSERT_EQ(at_kill, v1::JOB_STATE_RUNNING)
      << "the job must still be running when A is killed, or there is nothing to take over";
  EXPECT_FALSE(broken.ok()) << "the stream from the killed coordinator ends with an error";
  ASSERT_FALSE(batch_id.empty());

  // The client re-attaches to the survivor and gets the whole batch, each evaluation once.
  v1::EvaluateBatchRequest reattach;
  reattach.set_batch_id(batch_id);
  std::vector<v1::EvaluationRecord> all;
  grpc::Status s = ReadBatch(*cluster.Stub(b), reattach, &all, nullptr, 300);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << cluster.coordinator(b)->log();
  ASSERT_EQ(all.size(), static_cast<size_t>(kBatchSize));
  std::set<std::string> ids;
  for (const auto& r : all) {
    ids.insert(r.evaluation_id());
    EXPECT_EQ(r.result().verdict(), v1::VERDICT_OK) << r.result().reason();
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kBatchSize));

  // The job A was driving is resumed by B and finishes.
  std::vector<v1::JobEvent> events = WatchJob(*cluster.Stub(b), job_id, 600);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished(), v1::JOB_STATE_SUCCEEDED);
  v1::Job job = GetJob(*cluster.Stub(b), job_id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  const std::string b_log = cluster.coordinator(b)->log();
  EXPECT_FALSE(LogValues(b_log, "job running", "job_id", b_log_at_kill).empty())
      << "B took the job over\n"
      << b_log;
  ExpectJobDidNothingTwice(cluster, job_id);

  // Every result stored once: one done row per candidate of the batch, no lease or queue row
  // left, and no lease's result stored by both coordinators.
  PgResult rows = cluster.Query(
      "SELECT count(*) AS n, count(*) FILTER (WHERE state = 'done') AS done, "
      "  count(DISTINCT candidate_id) AS candidates, count(DISTINCT worker_id) AS workers "
      "FROM evaluations WHERE batch_id = '" + batch_id + "'");
  EXPECT_EQ(rows.Get(0, "n"), std::to_string(kBatchSize));
  EXPECT_EQ(rows.Get(0, "done"), std::to_string(kBatchSize));
  EXPECT_EQ(rows.Get(0, "candidates"), std::to_string(kBatchSize));
  EXPECT_GE(std::stoi(rows.Get(0, "workers")), 3) << "the batch ran on workers of both";
  EXPECT_EQ(cluster.Query("SELECT (SELECT count(*) FROM leases) + (SELECT count(*) FROM "
                          "eval_queue)")
                .Get(0, 0),
            "0");
  std::vector<std::string> stored = LogValues(cluster.coordinator(a)->log(), "result stored",
                                              "lease_id");
  std::vector<std::string> stored_by_b = LogValues(b_log, "result stored", "lease_id");
  stored.insert(stored.end(), stored_by_b.begin(), stored_by_b.end());
  EXPECT_EQ(std::set<std::string>(stored.begin(), stored.end()).size(), stored.size());

  // A's workers re-attached to B: results of leases A granted were stored by B, and each of
  // A's workers connected a second time.
  std::set<std::string> from_a(granted_by_a.begin(), granted_by_a.end());
  int delivered_to_b = 0;
  for (const auto& lease : LogValues(b_log, "result stored", "lease_id", b_log_at_kill)) {
    delivered_to_b += static_cast<int>(from_a.count(lease));
  }
  EXPECT_GE(delivered_to_b, 1) << "results of A's leases delivered through B\n" << b_log;
  for (ServiceProcess* w : workers_of_a) {
    EXPECT_GE(LogValues(w->log(), "connected", "worker_id").size(), 2u) << w->log();
  }
}

}  // namespace
}  // namespace kforge
