// Operators drain workers (docs/operations.md, "Draining a worker"), against a real coordinator
// pair on one PostgreSQL and scripted workers (rogue_worker.h): a drained worker is offered no
// new lease, by the replica that drained it or any other, while the lease it holds finishes and
// is stored and another worker takes the work; undrained, it leases again. Only operators and
// admins may drain; every drain and undrain is in the audit trail.
#include <chrono>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"
#include "tests/pg_harness.h"
#include "tests/rogue_worker.h"

namespace kforge {
namespace {

using ::testing::HasSubstr;

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

// Queues `n` distinct tiny_relu candidates for "cpu" and leaves the stream open.
std::unique_ptr<grpc::ClientReader<v1::EvaluationRecord>> Queue(v1::JobService::Stub& stub,
                                                                grpc::ClientContext& ctx,
                                                                const std::string& task, int n,
                                                                const std::string& tag) {
  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  for (int i = 0; i < n; ++i) {
    req.add_candidates()->set_source(ReadSourceFile("examples/candidates/tiny_relu/correct.py") +
                                     "\n# " + tag + " " + std::to_string(i) + "\n");
  }
  req.add_gpu_types("cpu");
  ctx.set_deadline(In(120));
  auto reader = stub.EvaluateBatch(&ctx, req);
  reader->WaitForInitialMetadata();
  return reader;
}

// What a worker sends for a candidate that did not build: valid, stored as it is.
v1::EvalResult CompileError() {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_COMPILE_ERROR);
  r.set_reason("scripted: does not build");
  return r;
}

grpc::Status Drain(v1::JobService::Stub& stub, const std::string& worker_id, bool drain,
                   v1::DrainWorkerResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(20));
  v1::DrainWorkerRequest req;
  req.set_worker_id(worker_id);
  return drain ? stub.DrainWorker(&ctx, req, resp) : stub.UndrainWorker(&ctx, req, resp);
}

v1::WorkerInfo Listed(v1::JobService::Stub& stub, const std::string& worker_id) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(20));
  v1::ListWorkersResponse resp;
  grpc::Status s = stub.ListWorkers(&ctx, v1::ListWorkersRequest(), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  for (const v1::WorkerInfo& w : resp.workers()) {
    if (w.worker_id() == worker_id) return w;
  }
  ADD_FAILURE() << "worker " << worker_id << " not listed";
  return {};
}

TEST(DrainTest, ADrainedWorkerGetsNoNewLeaseOnAnyReplicaUntilUndrained) {
  Cluster cluster("drain_worker");
  const size_t replica = cluster.AddCoordinator();
  const std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  auto stub = cluster.Stub(0);  // "tester": researcher, trainer, operator

  // Worker A streams from the second replica; it holds one lease when it is drained (through
  // the first replica).
  RogueWorker a(cluster.coordinator(replica)->grpc_address(), "cpu", cluster.worker_token());
  ASSERT_TRUE(a.registered().ok()) << a.registered().error_message();
  ASSERT_TRUE(a.Connect());
  grpc::ClientContext first_ctx;
  auto first = Queue(*stub, first_ctx, task, 1, "first");
  const std::string held = a.TakeLease();
  ASSERT_FALSE(held.empty());

  // Researchers may not drain or undrain.
  std::string researcher = cluster.CreateToken("alice", "lab", {"researcher"}).token();
  for (bool drain : {true, false}) {
    v1::DrainWorkerResponse denied;
    grpc::Status s = Drain(*cluster.StubWithToken(researcher), a.worker_id(), drain, &denied);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(s.error_message(),
              std::string("alice (roles: researcher) may not ") +
                  (drain ? "drain" : "undrain") +
                  " workers: it needs the operator or admin role");
  }
  v1::DrainWorkerResponse bad;
  EXPECT_EQ(Drain(*stub, "not-a-uuid", true, &bad).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Drain(*stub, "00000000-0000-0000-0000-000000000000", true, &bad).error_code(),
            grpc::StatusCode::NOT_FOUND);

  v1::DrainWorkerResponse drained;
  grpc::Status s = Drain(*stub, a.worker_id(), true, &drained);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(drained.was_draining());
  EXPECT_TRUE(drained.worker().draining());
  EXPECT_EQ(drained.worker().drained_by(), "tester");
  EXPECT_EQ(drained.worker().leases_held(), 1u);
  for (size_t i : {size_t{0}, replica}) {
    v1::WorkerInfo listed = Listed(*cluster.Stub(i), a.worker_id());
    EXPECT_TRUE(listed.draining()) << "coordinator " << i;
    EXPECT_EQ(listed.drained_by(), "tester");
  }

  // Work queued while A is drained and alone; A finishes its lease (stored as usual) and the
  // same statement that stores it would lease A its next evaluations: it gets none.
  grpc::ClientContext second_ctx;
  auto second = Queue(*stub, second_ctx, task, 2, "second");
  ASSERT_TRUE(a.Send(held, CompileError()));
  v1::EvaluationRecord rec;
  ASSERT_TRUE(first->Read(&rec));
  EXPECT_EQ(rec.worker_id(), a.worker_id());
  EXPECT_EQ(rec.result().verdict(), v1::VERDICT_COMPILE_ERROR);
  EXPECT_EQ(rec.result().reason(), "scripted: does not build");
  const std::string leases_of_a =
      "SELECT count(*) FROM leases WHERE worker_id = '" + a.worker_id() + "'";
  EXPECT_EQ(cluster.Query(leases_of_a).Get(0, 0), "0");
  EXPECT_EQ(cluster.Query("SELECT count(*) FROM eval_queue").Get(0, 0), "2");

  // Another worker takes the work.
  RogueWorker b(cluster.coordinator(0)->grpc_address(), "cpu", cluster.worker_token());
  ASSERT_TRUE(b.registered().ok());
  ASSERT_TRUE(b.Connect());
  for (int i = 0; i < 2; ++i) {
    const std::string lease = b.TakeLease();
    ASSERT_FALSE(lease.empty());
    ASSERT_TRUE(b.Send(lease, CompileError()));
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(second->Read(&rec));
    EXPECT_EQ(rec.worker_id(), b.worker_id());
  }
  EXPECT_EQ(cluster.Query("SELECT count(*) FROM evaluations WHERE worker_id = '" +
                          a.worker_id() + "'")
                .Get(0, 0),
            "1");
  b.Close();

  // Draining twice keeps who drained it first; undrained, A leases again.
  s = Drain(*cluster.Stub(replica), a.worker_id(), true, &drained);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(drained.was_draining());
  v1::DrainWorkerResponse undrained;
  s = Drain(*stub, a.worker_id(), false, &undrained);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(undrained.was_draining());
  EXPECT_FALSE(undrained.worker().draining());
  EXPECT_FALSE(Listed(*stub, a.worker_id()).draining());
  grpc::ClientContext third_ctx;
  auto third = Queue(*stub, third_ctx, task, 1, "third");
  const std::string again = a.TakeLease();
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(cluster.Query(leases_of_a).Get(0, 0), "1");
  ASSERT_TRUE(a.Send(again, CompileError()));
  ASSERT_TRUE(third->Read(&rec));
  EXPECT_EQ(rec.worker_id(), a.worker_id());
  a.Close();

  EXPECT_EQ(cluster.Query("SELECT string_agg(principal || ' ' || action || ' ' || target || ' ' "
                          "|| (detail->>'was_draining'), '; ' ORDER BY audit_id) FROM audit_log "
                          "WHERE action LIKE '%drain_worker'")
                .Get(0, 0),
            "tester drain_worker " + a.worker_id() + " false; tester drain_worker " +
                a.worker_id() + " true; tester undrain_worker " + a.worker_id() + " true");
  first_ctx.TryCancel();
  second_ctx.TryCancel();
  third_ctx.TryCancel();
}

}  // namespace
}  // namespace kforge
