// The distributed path as operators run it: a real PostgreSQL, the coordinator and CPU-mode
// workers as real processes on loopback, kforge-eval children in the sandbox. Proves that a
// batch lands only on workers of the requested GPU type, and that nothing is lost or stored
// twice when a worker, the coordinator or the database dies mid-batch, or a worker drains while
// it builds ahead.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/pg.h"
#include "common/result_json.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kforge/v1/jobs.grpc.pb.h"
#include "tests/loopback.h"
#include "tests/cluster.h"
#include "tests/pg_harness.h"
#include "tests/service_process.h"

namespace kforge {
namespace {

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

using Clock = std::chrono::steady_clock;

// A variant of the slow candidate with its own content hash.
std::string SlowCandidate(int i) {
  return ReadSourceFile("tests/distributed/slow_relu.py") + "\n# variant " + std::to_string(i) + "\n";
}

// A candidate like SlowCandidate whose construction (its build) takes `seconds`.
std::string SlowBuildCandidate(int i, int seconds) {
  return absl::StrReplaceAll(SlowCandidate(i),
                             {{"time.sleep(3)", absl::StrCat("time.sleep(", seconds, ")")}});
}

// A candidate like SlowCandidate that builds at once but whose first five calls (the
// correctness trials) take 1 s each, so that its evaluation on a slot far outlasts its build
// ahead, which never calls it.
std::string SlowForwardCandidate(int i) {
  return absl::StrReplaceAll(SlowCandidate(i), {{"time.sleep(3)", "self.calls = 0"},
                                                 {"return torch.clamp_min(x, 0)",
                                                  "self.calls += 1\n"
                                                  "        if self.calls <= 5:\n"
                                                  "            time.sleep(1)\n"
                                                  "        return torch.clamp_min(x, 0)"}});
}

// A field of one of the services' JSON log lines ("" when absent).
std::string LogField(const std::string& line, const std::string& key) {
  std::string marker = "\"" + key + "\":\"";
  size_t at = line.find(marker);
  if (at == std::string::npos) return "";
  at += marker.size();
  return line.substr(at, line.find('"', at) - at);
}

TEST(DistributedTest, BatchLandsOnlyOnWorkersOfTheRequestedType) {
  Cluster cluster("dist_routing");
  ASSERT_NE(cluster.StartWorker("typeA"), nullptr);
  ASSERT_NE(cluster.StartWorker("typeB"), nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  for (const char* c : {"correct", "wrong", "sleepy"}) {
    auto* spec = req.add_candidates();
    spec->set_source(ReadSourceFile(std::string("examples/candidates/tiny_relu/") + c + ".py"));
    spec->set_client_ref(c);
  }
  req.add_gpu_types("typeA");
  req.add_gpu_types("typeB");
  std::vector<v1::EvaluationRecord> records;
  auto stub = cluster.Stub();
  grpc::Status s = ReadBatch(*stub, req, &records, nullptr);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(records.size(), 6u);
  std::map<std::string, v1::Verdict> verdicts;
  for (const auto& r : records) verdicts[r.client_ref() + "/" + r.gpu_type()] = r.result().verdict();
  EXPECT_EQ(verdicts["correct/typeA"], v1::VERDICT_OK);
  EXPECT_EQ(verdicts["correct/typeB"], v1::VERDICT_OK);
  EXPECT_EQ(verdicts["wrong/typeA"], v1::VERDICT_INCORRECT);
  EXPECT_EQ(verdicts["sleepy/typeB"], v1::VERDICT_OK);
  // Each ran on a worker of the type it asked for.
  PgResult rows = cluster.Query(
      "SELECT count(*) FILTER (WHERE e.ran_on_gpu_type = e.gpu_type AND w.gpu_type = e.gpu_type) "
      "  AS matched, count(*) AS total FROM evaluations e JOIN workers w USING (worker_id)");
  EXPECT_EQ(rows.Get(0, "matched"), "6");
  EXPECT_EQ(rows.Get(0, "total"), "6");
}

// The trust boundary end to end: exploit candidates that forge a result from host C++, reach
// for the judge, or answer before their work is done run under the runtime policy (no static
// rule stops them) through a worker's sandbox, and none of them reaches PostgreSQL as `ok`.
// The task's numerics ("torch": cuDNN's TF32 on) reach the candidate's process the same way:
// the candidate that answers correctly only under fp32 (the default, tested in CPU mode by
// run_cases.py) is incorrect.
TEST(DistributedTest, ForgedResultsNeverReachTheDatabase) {
  Cluster cluster("dist_forged");
  ASSERT_NE(cluster.StartWorker("cpu"), nullptr);
  v1::TaskOptions options;
  options.set_policy("runtime");
  options.set_numerics("torch");
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py", options);
  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  for (const char* c : {"forged_result", "reaches_judge", "early_done"}) {
    auto* spec = req.add_candidates();
    spec->set_source(ReadSourceFile(std::string("tests/engine/exploits/") + c + ".cpp"));
    spec->set_dialect(v1::DIALECT_CPP);
    spec->set_client_ref(c);
  }
  auto* numerics = req.add_candidates();
  numerics->set_source(ReadSourceFile("tests/engine/candidates/fp32_switch_defaults.py"));
  numerics->set_client_ref("fp32_switch_defaults");
  req.add_gpu_types("cpu");
  std::vector<v1::EvaluationRecord> records;
  auto stub = cluster.Stub();
  grpc::Status s = ReadBatch(*stub, req, &records, nullptr);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(records.size(), 4u);
  std::map<std::string, v1::EvalResult> results;
  for (const auto& r : records) results[r.client_ref()] = r.result();
  EXPECT_EQ(results["forged_result"].verdict(), v1::VERDICT_RUNTIME_ERROR)
      << results["forged_result"].reason();
  EXPECT_EQ(results["reaches_judge"].verdict(), v1::VERDICT_INCORRECT)
      << results["reaches_judge"].reason();
  EXPECT_EQ(results["early_done"].rule(), "stale_memory") << results["early_done"].reason();
  EXPECT_EQ(results["fp32_switch_defaults"].verdict(), v1::VERDICT_INCORRECT)
      << results["fp32_switch_defaults"].reason();
  for (const auto& [ref, r] : results) {
    EXPECT_EQ(r.policy(), "runtime") << ref;
    EXPECT_FALSE(r.has_speedup()) << ref;
  }
  PgResult rows = cluster.Query(
      "SELECT count(*) FILTER (WHERE verdict = 'ok' OR speedup IS NOT NULL) AS forged, "
      "count(*) AS total FROM evaluations WHERE task_id = '" + task + "'");
  EXPECT_EQ(rows.Get(0, "forged"), "0");
  EXPECT_EQ(rows.Get(0, "total"), "4");
}

TEST(DistributedTest, MalformedAndUnknownRequestsGetClearErrors) {
  Cluster cluster("dist_errors");
  auto stub = cluster.Stub();
  std::vector<v1::EvaluationRecord> records;
  v1::EvaluateBatchRequest req;
  grpc::Status s = ReadBatch(*stub, req, &records, nullptr, 10);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "task_id is required");
  req.set_task_id("0000");
  req.add_candidates()->set_source("class ModelNew: pass");
  req.add_gpu_types("any");
  s = ReadBatch(*stub, req, &records, nullptr, 10);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "no task 0000 (submit it first with SubmitTask)");
  v1::EvaluateBatchRequest reattach;
  reattach.set_batch_id("00000000-0000-0000-0000-000000000000");
  s = ReadBatch(*stub, reattach, &records, nullptr, 10);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(DistributedTest, KilledWorkersEvaluationCompletesElsewhereOnce) {
  Cluster cluster("dist_worker_kill");
  ServiceProcess* doomed = cluster.StartWorker("cpu");
  ASSERT_NE(doomed, nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  req.add_candidates()->set_source(SlowCandidate(0));
  req.add_gpu_types("cpu");
  std::vector<v1::EvaluationRecord> records;
  grpc::Status status;
  auto stub = cluster.Stub();
  std::thread client([&] { status = ReadBatch(*stub, req, &records, nullptr); });
  ASSERT_TRUE(cluster.WaitFor("SELECT state FROM evaluations", "leased"));
  doomed->Kill();
  ASSERT_NE(cluster.StartWorker("cpu"), nullptr);
  client.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].result().verdict(), v1::VERDICT_OK) << records[0].result().reason();
  EXPECT_EQ(records[0].attempts(), 2u);
  PgResult rows = cluster.Query(
      "SELECT count(*) AS n, count(*) FILTER (WHERE state = 'done') AS done, "
      "  (SELECT count(*) FROM leases) AS leases FROM evaluations");
  EXPECT_EQ(rows.Get(0, "n"), "1");
  EXPECT_EQ(rows.Get(0, "done"), "1");
  EXPECT_EQ(rows.Get(0, "leases"), "0");
}

TEST(DistributedTest, CoordinatorKilledMidBatchClientReattachesAndNothingIsLost) {
  Cluster cluster("dist_coordinator_kill");
  ServiceProcess* worker = cluster.StartWorker("cpu");
  ASSERT_NE(worker, nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  for (int i = 0; i < 3; ++i) req.add_candidates()->set_source(SlowCandidate(i));
  req.add_gpu_types("cpu");
  std::vector<v1::EvaluationRecord> first;
  std::string batch_id;
  grpc::Status broken;
  auto stub = cluster.Stub();
  std::thread client([&] { broken = ReadBatch(*stub, req, &first, &batch_id); });
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM evaluations WHERE state = 'leased'", "1"));
  cluster.KillCoordinator();
  client.join();
  EXPECT_FALSE(broken.ok());
  ASSERT_FALSE(batch_id.empty());
  cluster.StartCoordinator();
  v1::EvaluateBatchRequest reattach;
  reattach.set_batch_id(batch_id);
  std::vector<v1::EvaluationRecord> all;
  auto stub2 = cluster.Stub();
  grpc::Status s = ReadBatch(*stub2, reattach, &all, nullptr);
  // The reconnected worker may still run the lease it had: the new coordinator must count it,
  // not lease the one slot a second time (the worker logs how many it holds on each lease).
  std::istringstream log(worker->log());
  int most_held = 0;
  for (std::string line; std::getline(log, line);) {
    if (LogField(line, "msg") == "lease received") {
      most_held = std::max(most_held, std::stoi(LogField(line, "held")));
    }
  }
  EXPECT_EQ(most_held, 1) << "a one-slot worker held more leases than its slot\n" << worker->log();
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(all.size(), 3u);
  std::set<std::string> ids;
  for (const auto& r : all) {
    ids.insert(r.evaluation_id());
    EXPECT_EQ(r.result().verdict(), v1::VERDICT_OK) << r.result().reason();
  }
  EXPECT_EQ(ids.size(), 3u);
  PgResult rows = cluster.Query(
      "SELECT count(*) AS n, count(*) FILTER (WHERE state = 'done') AS done FROM evaluations");
  EXPECT_EQ(rows.Get(0, "n"), "3");
  EXPECT_EQ(rows.Get(0, "done"), "3");
}

TEST(DistributedTest, DatabaseRestartMidRunLosesNothing) {
  Cluster cluster("dist_db_restart");
  ASSERT_NE(cluster.StartWorker("cpu"), nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  for (int i = 0; i < 2; ++i) req.add_candidates()->set_source(SlowCandidate(10 + i));
  req.add_gpu_types("cpu");
  std::vector<v1::EvaluationRecord> first;
  std::string batch_id;
  grpc::Status first_status;
  auto stub = cluster.Stub();
  std::thread client([&] { first_status = ReadBatch(*stub, req, &first, &batch_id); });
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM evaluations WHERE state = 'leased'", "1"));
  ASSERT_TRUE(PgTestEnvironment::server().Restart().ok());
  client.join();
  // The stream may survive the restart or break with an error; either way the batch is whole.
  ASSERT_FALSE(batch_id.empty());
  v1::EvaluateBatchRequest reattach;
  reattach.set_batch_id(batch_id);
  std::vector<v1::EvaluationRecord> all;
  grpc::Status s = ReadBatch(*stub, reattach, &all, nullptr);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(all.size(), 2u);
  for (const auto& r : all) EXPECT_EQ(r.result().verdict(), v1::VERDICT_OK) << r.result().reason();
}

// The slot's evaluations (6 s each) far outlast the builds ahead (under 1 s once the builder's
// fork server runs), so the compile error, leased when the slot finishes the first evaluation
// or later, is always built before the slot is free to take it. (With candidates whose build
// and evaluation took about as long, CI once saw the slot take it first.)
TEST(DistributedTest, WorkerBuildsTheNextLeaseWhileItsSlotRunsAndCompileErrorsNeverReachASlot) {
  // Leases here must not expire (an expiry runs an evaluation twice, which the counts below
  // would misread): the cluster's 3 s, made for the tests that kill workers, is shorter than a
  // stall of a loaded 2-core CI machine (one CI run saw an evaluation leased twice).
  Cluster cluster("dist_build_ahead", /*gateway=*/false, {"--lease_timeout_s=60"});
  ServiceProcess* worker = cluster.StartWorker("cpu", 1, {"--prefetch=1"});
  ASSERT_NE(worker, nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  for (int i = 0; i < 3; ++i) req.add_candidates()->set_source(SlowForwardCandidate(20 + i));
  req.add_candidates()->set_source(ReadSourceFile("tests/engine/candidates/nvrtc_compile_error.py"));
  req.add_gpu_types("cpu");
  std::vector<v1::EvaluationRecord> records;
  auto stub = cluster.Stub();
  grpc::Status s = ReadBatch(*stub, req, &records, nullptr);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(records.size(), 4u);
  std::map<std::string, int> verdicts;
  for (const auto& r : records) ++verdicts[VerdictName(r.result().verdict())];
  EXPECT_EQ(verdicts["ok"], 3);
  EXPECT_EQ(verdicts["compile_error"], 1);
  PgResult rows = cluster.Query(
      "SELECT count(*) AS n, count(*) FILTER (WHERE state = 'done') AS done, max(attempts) AS a, "
      "  (SELECT count(*) FROM leases) AS leases FROM evaluations");
  EXPECT_EQ(rows.Get(0, "n"), "4");
  EXPECT_EQ(rows.Get(0, "done"), "4");
  EXPECT_EQ(rows.Get(0, "a"), "1") << "worker:\n"
                                   << worker->log() << "coordinator:\n"
                                   << cluster.coordinator()->log();
  EXPECT_EQ(rows.Get(0, "leases"), "0");

  // The worker's log, in order: which lease ran on the slot and which was built meanwhile.
  std::istringstream log(worker->log());
  std::string line;
  std::set<std::string> running, started, built_while_running, started_built;
  std::string compile_error_lease;
  while (std::getline(log, line)) {
    std::string msg = LogField(line, "msg"), lease = LogField(line, "lease_id");
    if (msg == "evaluation started") {
      running.insert(lease);
      started.insert(lease);
      if (LogField(line, "built_ahead") == "true") started_built.insert(lease);
    } else if (msg == "evaluation done") {
      running.erase(lease);
    } else if (msg == "build ahead done") {
      if (!running.empty() && !running.count(lease)) built_while_running.insert(lease);
      if (LogField(line, "outcome") == "compile_error") compile_error_lease = lease;
    }
  }
  EXPECT_EQ(started.size(), 3u) << "the compile error must be decided by the build ahead";
  EXPECT_FALSE(compile_error_lease.empty());
  EXPECT_EQ(started.count(compile_error_lease), 0u);
  EXPECT_GE(built_while_running.size(), 2u) << worker->log();
  EXPECT_GE(started_built.size(), 1u) << worker->log();
}

TEST(DistributedTest, DrainStopsABuildAheadAndHandsItsLeaseBack) {
  Cluster cluster("dist_drain_build");
  ServiceProcess* worker = cluster.StartWorker("cpu", 1, {"--prefetch=1"});
  ASSERT_NE(worker, nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  auto stub = cluster.Stub();
  // The slot's evaluation (builds for 12 s, then runs to its end during the drain).
  v1::EvaluateBatchRequest slot_req;
  slot_req.set_task_id(task);
  slot_req.add_candidates()->set_source(SlowBuildCandidate(50, 12));
  slot_req.add_gpu_types("cpu");
  std::vector<v1::EvaluationRecord> slot_records;
  grpc::Status slot_status;
  std::thread slot_client(
      [&] { slot_status = ReadBatch(*stub, slot_req, &slot_records, nullptr); });
  ASSERT_TRUE(cluster.WaitFor("SELECT state FROM evaluations", "leased"));
  // Leased while the slot is busy: built ahead, for far longer than the drain may take (the
  // build limit, 120 s, would stop it first) unless the drain stops it. Its client stops
  // reading after a few seconds; the batch stays queued.
  v1::EvaluateBatchRequest ahead_req = slot_req;
  ahead_req.mutable_candidates(0)->set_source(SlowBuildCandidate(51, 300));
  std::vector<v1::EvaluationRecord> ahead_records;
  std::thread ahead_client([&] { ReadBatch(*stub, ahead_req, &ahead_records, nullptr, 3); });
  bool building = false;
  for (auto until = Clock::now() + std::chrono::seconds(60); !building && Clock::now() < until;) {
    building = worker->log().find("\"build ahead started\"") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(building) << worker->log();
  ahead_client.join();

  SubprocessResult exit = worker->Terminate(60);
  EXPECT_FALSE(exit.timed_out) << "the drain waited for the build ahead\n" << worker->log();
  EXPECT_EQ(exit.exit_code, 0) << exit.Describe();
  const std::string log = worker->log();
  EXPECT_NE(log.find("\"build ahead cancelled\""), std::string::npos) << log;
  EXPECT_EQ(log.find("\"build ahead done\""), std::string::npos) << log;

  // The slot's evaluation finished and was delivered; the built-ahead one is queued again,
  // with no lease and no attempt counted.
  slot_client.join();
  ASSERT_TRUE(slot_status.ok()) << slot_status.error_message();
  ASSERT_EQ(slot_records.size(), 1u);
  EXPECT_EQ(slot_records[0].result().verdict(), v1::VERDICT_OK)
      << slot_records[0].result().reason();
  PgResult rows = cluster.Query(
      "SELECT count(*) FILTER (WHERE state = 'done') AS done, "
      "  count(*) FILTER (WHERE state = 'queued' AND attempts = 0) AS requeued, "
      "  (SELECT count(*) FROM leases) AS leases FROM evaluations");
  EXPECT_EQ(rows.Get(0, "done"), "1");
  EXPECT_EQ(rows.Get(0, "requeued"), "1");
  EXPECT_EQ(rows.Get(0, "leases"), "0");
}

}  // namespace
}  // namespace kforge
