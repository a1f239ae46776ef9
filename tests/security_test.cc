// Who may talk to the coordinator (docs/security.md), against real processes: a worker without
// credentials is refused, a revoked one is cut off mid-stream and its leases requeue, a
// researcher cannot cancel another's job, a trainer cannot submit jobs, tokens are created,
// listed and revoked with the CLI and stored only as hashes, every stored evaluation names
// the worker identity that produced it, and workers get in with the coordinators' bootstrap
// worker token (the Helm chart's) with no token made by hand.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/base/sha256.h"
#include "common/base/subprocess.h"
#include "common/channel.h"
#include "common/secrets.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"
#include "tests/pg_harness.h"
#include "tests/rogue_worker.h"
#include "tests/test_pki.h"

namespace kforge {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

void SetDeadline(grpc::ClientContext& ctx, int seconds = 20) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

// CancelJob of `job_id` as the holder of `token`.
grpc::Status CancelJobAs(Cluster& cluster, const std::string& token, const std::string& job_id) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::CancelJobRequest req;
  req.set_job_id(job_id);
  v1::CancelJobResponse resp;
  return cluster.StubWithToken(token)->CancelJob(&ctx, req, &resp);
}

// Queues `candidate` for `gpu_type` and leaves the stream open (the context keeps it).
std::unique_ptr<grpc::ClientReader<v1::EvaluationRecord>> Queue(
    v1::JobService::Stub& stub, grpc::ClientContext& ctx, const std::string& task,
    const std::string& candidate, const std::string& gpu_type) {
  v1::EvaluateBatchRequest req;
  req.set_task_id(task);
  req.add_candidates()->set_source(ReadSourceFile(candidate));
  req.add_gpu_types(gpu_type);
  SetDeadline(ctx, 120);
  auto reader = stub.EvaluateBatch(&ctx, req);
  reader->WaitForInitialMetadata();
  return reader;
}

// `candidate` evaluated for tiny_relu on the cluster's "cpu" workers; its first record (a
// stream that ends first fails the test and gives an empty record).
v1::EvaluationRecord EvaluateOnCpu(Cluster& cluster, const std::string& candidate) {
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  grpc::ClientContext ctx;
  auto stub = cluster.Stub();
  auto batch = Queue(*stub, ctx, task, candidate, "cpu");
  v1::EvaluationRecord rec;
  EXPECT_TRUE(batch->Read(&rec)) << "no result";
  ctx.TryCancel();
  return rec;
}

TEST(SecurityTest, AWorkerWithoutCredentialsOrTheWorkerRoleIsRefused) {
  Cluster cluster("sec_rogue");
  RogueWorker anonymous(cluster.coordinator()->grpc_address(), "cpu", "");
  EXPECT_EQ(anonymous.registered().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(anonymous.registered().error_message(), StartsWith("no credentials"));
  anonymous.set_worker_id("00000000-0000-0000-0000-000000000000");
  // Its hello may not even be written: the coordinator ends a stream without credentials
  // before reading it (seen on a loaded machine). What counts is how the stream ends.
  anonymous.Connect();
  grpc::Status s = anonymous.Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();

  std::string researcher = cluster.CreateToken("alice", "lab", {"researcher"}).token();
  RogueWorker impostor(cluster.coordinator()->grpc_address(), "cpu", researcher);
  EXPECT_EQ(impostor.registered().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(impostor.registered().error_message(),
            "alice (roles: researcher) may not register as a worker: it needs the worker role");

  // A worker token cannot take over another identity's registration.
  RogueWorker legit(cluster.coordinator()->grpc_address(), "cpu", cluster.worker_token());
  ASSERT_TRUE(legit.registered().ok()) << legit.registered().error_message();
  std::string other = cluster.CreateToken("other-node", "default", {"worker"}).token();
  RogueWorker thief(cluster.coordinator()->grpc_address(), "cpu", other);
  thief.set_worker_id(legit.worker_id());
  ASSERT_TRUE(thief.Connect());
  s = thief.Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(s.error_message(), HasSubstr("registered with another identity"));
  EXPECT_EQ(cluster.Query("SELECT count(*) FROM workers").Get(0, 0), "2");  // legit and thief
}

TEST(SecurityTest, ARevokedWorkerIsCutOffMidStreamAndItsLeasesRequeue) {
  Cluster cluster("sec_revoked");
  v1::CreateTokenResponse node = cluster.CreateToken("node-7", "default", {"worker"});
  RogueWorker worker(cluster.coordinator()->grpc_address(), "cpu", node.token());
  ASSERT_TRUE(worker.registered().ok()) << worker.registered().error_message();
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  auto stub = cluster.Stub();
  grpc::ClientContext batch_ctx;
  auto batch = Queue(*stub, batch_ctx, task, "examples/candidates/tiny_relu/correct.py", "cpu");
  ASSERT_TRUE(worker.Connect());
  std::string lease = worker.TakeLease();
  ASSERT_FALSE(lease.empty());
  EXPECT_EQ(cluster.Query("SELECT count(*) FROM leases").Get(0, 0), "1");

  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::RevokeTokenRequest revoke;
  revoke.set_token_id(node.info().token_id());
  v1::RevokeTokenResponse revoked;
  grpc::Status s = cluster.Admin()->RevokeToken(&ctx, revoke, &revoked);
  ASSERT_TRUE(s.ok()) << s.error_message();

  ASSERT_TRUE(worker.Heartbeat(lease));
  s = worker.Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), StartsWith("worker credentials no longer valid: API token " +
                                            node.info().token_id() + " was revoked at "));
  PgResult rows = cluster.Query(
      "SELECT (SELECT count(*) FROM leases) || '/' || (SELECT count(*) FROM eval_queue) || '/' || "
      "(SELECT attempts FROM evaluations) || '/' || (SELECT state FROM evaluations)");
  EXPECT_EQ(rows.Get(0, 0), "0/1/0/queued");  // back in the queue, the attempt not counted

  RogueWorker again(cluster.coordinator()->grpc_address(), "cpu", node.token());
  EXPECT_EQ(again.registered().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  batch_ctx.TryCancel();
}

TEST(SecurityTest, JobsBelongToTheirPrincipalAndRolesLimitWhatTokensDo) {
  Cluster cluster("sec_roles");
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  std::string alice = cluster.CreateToken("alice", "lab", {"researcher"}).token();
  std::string bob = cluster.CreateToken("bob", "lab", {"researcher"}).token();
  std::string trainer = cluster.CreateToken("rl-trainer", "lab", {"trainer"}).token();

  v1::SubmitJobRequest job = ReluJobRequest(task, 1, 7);
  job.set_gpu_types(0, "any");
  auto submit = [&](const std::string& token, v1::SubmitJobResponse* resp) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    return cluster.StubWithToken(token)->SubmitJob(&ctx, job, resp);
  };
  v1::SubmitJobResponse a1, a2, none;
  ASSERT_TRUE(submit(alice, &a1).ok());
  ASSERT_TRUE(submit(alice, &a2).ok());
  grpc::Status s = CancelJobAs(cluster, bob, a1.job_id());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "bob of tenant lab may not cancel job " + a1.job_id() +
                                   ": it belongs to alice of tenant lab (only its owner or an "
                                   "operator may cancel it)");
  EXPECT_TRUE(CancelJobAs(cluster, alice, a1.job_id()).ok());
  EXPECT_TRUE(CancelJobAs(cluster, "", a2.job_id()).error_code() ==
              grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(
      CancelJobAs(cluster, cluster.CreateToken("ops", "default", {"operator"}).token(), a2.job_id())
          .ok());

  s = submit(trainer, &none);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "rl-trainer (roles: trainer) may not submit jobs: it needs the researcher role");
  grpc::ClientContext batch_ctx;
  auto batch = Queue(*cluster.StubWithToken(trainer), batch_ctx, task,
                     "examples/candidates/tiny_relu/correct.py", "any");
  EXPECT_EQ(cluster.Query("SELECT owner || '/' || tenant FROM batches WHERE job_id IS NULL")
                .Get(0, 0),
            "rl-trainer/lab");
  grpc::ClientContext list_ctx;
  SetDeadline(list_ctx);
  v1::ListWorkersResponse workers;
  s = cluster.StubWithToken(trainer)->ListWorkers(&list_ctx, v1::ListWorkersRequest(), &workers);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(cluster.Query("SELECT string_agg(owner || ':' || state, ',' ORDER BY created_at) "
                          "FROM jobs")
                .Get(0, 0),
            "alice:cancelled,alice:cancelled");
  batch_ctx.TryCancel();
}

// Red team, session 29: CancelJob compared the owner's name only, so "alice" of one tenant
// cancelled the jobs of "alice" of another (who could read them: tenant public's).
TEST(SecurityTest, APrincipalOfTheSameNameInAnotherTenantCannotCancelAJob) {
  Cluster cluster("sec_same_name");
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  std::string public_alice = cluster.CreateToken("alice", "public", {"researcher"}).token();
  std::string lab_alice = cluster.CreateToken("alice", "lab-a", {"researcher"}).token();
  v1::SubmitJobRequest job = ReluJobRequest(task, 1, 7);
  job.set_gpu_types(0, "any");
  std::string id = SubmitJob(*cluster.StubWithToken(public_alice), job);
  ASSERT_FALSE(id.empty());
  grpc::Status s = CancelJobAs(cluster, lab_alice, id);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "alice of tenant lab-a may not cancel job " + id +
                                   ": it belongs to alice of tenant public (only its owner or "
                                   "an operator may cancel it)");
  EXPECT_EQ(cluster.Query("SELECT state FROM jobs").Get(0, 0), "queued");
  EXPECT_TRUE(CancelJobAs(cluster, public_alice, id).ok());
}

// Revokes the token whose id is `token_id` with the cluster's admin (fails the test if refused).
void Revoke(Cluster& cluster, const std::string& token_id) {
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::RevokeTokenRequest revoke;
  revoke.set_token_id(token_id);
  v1::RevokeTokenResponse revoked;
  grpc::Status s = cluster.Admin()->RevokeToken(&ctx, revoke, &revoked);
  ASSERT_TRUE(s.ok()) << s.error_message();
}

// Red team, session 29: EvaluateBatch and WatchJob checked the token only when called, so a
// client whose token was revoked (or expired) kept reading results and job events for as long
// as it kept the stream open. Both streams now end UNAUTHENTICATED within a poll interval.
TEST(SecurityTest, OpenResultAndJobStreamsEndWhenTheirTokenIsRevoked) {
  Cluster cluster("sec_streams");
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  v1::CreateTokenResponse reader = cluster.CreateToken("reader", "lab", {"researcher"});
  auto stub = cluster.StubWithToken(reader.token());
  // No worker serves "cpu" here: the batch stays queued and its stream open.
  grpc::ClientContext batch_ctx;
  auto batch = Queue(*stub, batch_ctx, task, "examples/candidates/tiny_relu/correct.py", "cpu");
  v1::SubmitJobRequest job = ReluJobRequest(task, 1, 7);
  job.set_gpu_types(0, "any");
  std::string job_id = SubmitJob(*stub, job);
  ASSERT_FALSE(job_id.empty());
  grpc::ClientContext watch_ctx;
  SetDeadline(watch_ctx, 30);
  v1::WatchJobRequest watch_req;
  watch_req.set_job_id(job_id);
  auto watch = stub->WatchJob(&watch_ctx, watch_req);

  Revoke(cluster, reader.info().token_id());
  const auto revoked_at = std::chrono::steady_clock::now();
  v1::EvaluationRecord rec;
  while (batch->Read(&rec)) {
  }
  grpc::Status s = batch->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr(reader.info().token_id() + " was revoked at "));
  v1::JobEvent ev;
  while (watch->Read(&ev)) {
  }
  s = watch->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr(reader.info().token_id() + " was revoked at "));
  EXPECT_LT(std::chrono::steady_clock::now() - revoked_at, std::chrono::seconds(10));
}

SubprocessResult Kforge(Cluster& cluster, std::vector<std::string> args,
                        const std::string& token_env = "") {
  SpawnOptions o;
  o.argv = {BuiltBinary("cli/kforge"), "--coordinator=" + cluster.coordinator()->grpc_address()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = {"KFORGE_TLS_CA_FILE=" + TestPki::Shared().ca_file};
  if (!token_env.empty()) o.env.push_back("KFORGE_TOKEN=" + token_env);
  o.wall_limit_s = 60;
  return RunSubprocess(std::move(o));
}

TEST(SecurityTest, TheCliCreatesListsAndRevokesTokensStoredOnlyAsHashes) {
  Cluster cluster("sec_cli");
  const std::string admin = "--token_file=" + cluster.admin_token_file();
  SubprocessResult created = Kforge(
      cluster, {admin, "token", "create", "--principal=carol", "--tenant=lab", "--roles=researcher"});
  ASSERT_EQ(created.exit_code, 0) << created.stderr_data;
  std::string token = created.stdout_data.substr(0, created.stdout_data.find('\n'));
  ASSERT_THAT(token, StartsWith("kf_"));
  EXPECT_EQ(cluster.Query("SELECT count(*) FILTER (WHERE token_hash = '" + token + "') || '/' || "
                          "count(*) FILTER (WHERE token_hash = '" + Sha256Hex(token) + "') "
                          "FROM api_tokens")
                .Get(0, 0),
            "0/1");

  SubprocessResult denied = Kforge(cluster, {"workers"}, token);
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_EQ(denied.stderr_data,
            "kforge: permission denied: carol (roles: researcher) may not list workers: it "
            "needs the operator role\n");
  SubprocessResult not_admin = Kforge(cluster, {"token", "list"}, token);
  EXPECT_THAT(not_admin.stderr_data, HasSubstr("may not list tokens: it needs the admin role"));

  SubprocessResult listed = Kforge(cluster, {admin, "token", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.stderr_data;
  std::string id = cluster.Query("SELECT token_id FROM api_tokens WHERE principal = 'carol'")
                       .Get(0, 0);
  EXPECT_THAT(listed.stdout_data, HasSubstr(id));
  SubprocessResult revoked = Kforge(cluster, {admin, "token", "revoke", id});
  ASSERT_EQ(revoked.exit_code, 0) << revoked.stderr_data;
  SubprocessResult after = Kforge(cluster, {"results"}, token);
  EXPECT_EQ(after.exit_code, 1);
  EXPECT_THAT(after.stderr_data,
              StartsWith("kforge: not authenticated: API token " + id + " was revoked at "));
  SubprocessResult anonymous = Kforge(cluster, {"results"});
  EXPECT_THAT(anonymous.stderr_data, StartsWith("kforge: not authenticated: no credentials"));
}

TEST(SecurityTest, EveryStoredEvaluationNamesTheWorkerIdentityThatProducedIt) {
  Cluster cluster("sec_identity");
  ASSERT_NE(cluster.StartWorker("cpu"), nullptr);
  v1::EvaluationRecord rec = EvaluateOnCpu(cluster, "examples/candidates/tiny_relu/correct.py");
  EXPECT_EQ(rec.result().verdict(), v1::VERDICT_OK) << rec.result().reason();
  EXPECT_EQ(cluster.Query("SELECT t.principal FROM evaluations e "
                          "JOIN api_tokens t ON t.token_id = e.worker_token_id")
                .Get(0, 0),
            "cluster-worker");
}

// The Helm chart gives its coordinators and its workers one generated token file
// (helm/README.md, "TLS and credentials"): the coordinators store it with the worker role at
// startup (--bootstrap_worker_token_file), so a worker registers and evaluates with no token
// made by hand; restarts keep one row, a revoked one stays revoked, and a coordinator given
// another identity's token as the workers' refuses to start.
TEST(SecurityTest, TheBootstrapWorkerTokenLetsWorkersInWithNoTokenMadeByHand) {
  TempDir dir;
  const std::string file = dir.path() + "/worker-token";
  const std::string token = *NewToken();
  std::ofstream(file) << token << "\n";
  const std::string flag = "--bootstrap_worker_token_file=" + file;
  Cluster cluster("sec_bootstrap_worker", /*gateway=*/false, {flag});
  cluster.AddCoordinator();  // a second replica finds it stored
  ASSERT_NE(cluster.StartWorker("cpu", 1, {"--token_file=" + file}), nullptr);
  v1::EvaluationRecord rec = EvaluateOnCpu(cluster, "examples/candidates/tiny_relu/correct.py");
  EXPECT_EQ(rec.result().verdict(), v1::VERDICT_OK) << rec.result().reason();
  EXPECT_EQ(cluster.Query("SELECT t.principal || ' ' || array_to_string(t.roles, ',') || ' ' || "
                          "t.created_by FROM evaluations e "
                          "JOIN api_tokens t ON t.token_id = e.worker_token_id")
                .Get(0, 0),
            "bootstrap-worker worker bootstrap");
  const std::string stored = "SELECT count(*) FROM api_tokens WHERE token_hash = '" +
                             Sha256Hex(token) + "'";
  EXPECT_EQ(cluster.Query(stored).Get(0, 0), "1");

  // Revoked, it stays revoked when the coordinators restart with the same file.
  const std::string id =
      cluster.Query("SELECT token_id FROM api_tokens WHERE principal = 'bootstrap-worker'")
          .Get(0, 0);
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::RevokeTokenRequest revoke;
  revoke.set_token_id(id);
  v1::RevokeTokenResponse revoked;
  grpc::Status s = cluster.Admin()->RevokeToken(&ctx, revoke, &revoked);
  ASSERT_TRUE(s.ok()) << s.error_message();
  cluster.KillCoordinator(0);
  cluster.StartCoordinator(0);
  EXPECT_EQ(cluster.Query(stored).Get(0, 0), "1");
  RogueWorker again(cluster.coordinator()->grpc_address(), "cpu", token);
  EXPECT_EQ(again.registered().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(again.registered().error_message(), HasSubstr(id + " was revoked at "));

  // The admin's token given as the workers': refused at startup, with the reason.
  auto wrong = ServiceProcess::Start(
      BuiltBinary("coordinator/kforge-coordinator"),
      {"--database_url=" + PgTestEnvironment::server().Url("sec_bootstrap_worker"),
       "--bootstrap_worker_token_file=" + cluster.admin_token_file()});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(wrong.status().message(),
              HasSubstr("bootstrap worker token: this token is stored already as token "));
  EXPECT_THAT(wrong.status().message(), HasSubstr("of bootstrap-admin, without the worker role"));
}

TEST(SecurityTest, TheAuditTrailRecordsWhoDidWhatAndCannotBeRewritten) {
  Cluster cluster("sec_audit");
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  v1::CreateTokenResponse alice = cluster.CreateToken("alice", "lab", {"researcher"});
  v1::SubmitJobRequest job = ReluJobRequest(task, 1, 7);
  job.set_gpu_types(0, "any");
  std::string job_id = SubmitJob(*cluster.StubWithToken(alice.token()), job);
  ASSERT_FALSE(job_id.empty());
  grpc::ClientContext ctx;
  SetDeadline(ctx);
  v1::CancelJobRequest cancel;
  cancel.set_job_id(job_id);
  v1::CancelJobResponse cancelled;
  ASSERT_TRUE(cluster.StubWithToken(alice.token())->CancelJob(&ctx, cancel, &cancelled).ok());
  RogueWorker worker(cluster.coordinator()->grpc_address(), "cpu", cluster.worker_token());
  ASSERT_TRUE(worker.registered().ok());

  SubprocessResult listed =
      Kforge(cluster, {"--token_file=" + cluster.admin_token_file(), "audit", "--limit=20"});
  ASSERT_EQ(listed.exit_code, 0) << listed.stderr_data;
  PgResult rows = cluster.Query(
      "SELECT string_agg(principal || ' ' || action || ' ' || target, '; ' ORDER BY audit_id) "
      "FROM audit_log");
  EXPECT_EQ(rows.Get(0, 0),
            "bootstrap-admin create_token " +
                cluster.Query("SELECT token_id FROM api_tokens WHERE principal = 'tester'")
                    .Get(0, 0) +
                "; bootstrap-admin create_token " +
                cluster.Query("SELECT token_id FROM api_tokens WHERE principal = 'cluster-worker'")
                    .Get(0, 0) +
                "; tester submit_task " + task + "; bootstrap-admin create_token " +
                alice.info().token_id() + "; alice submit_job " + job_id + "; alice cancel_job " +
                job_id + "; cluster-worker register_worker " + worker.worker_id());
  for (const std::string& line : {std::string("alice"), std::string("cancel_job"), job_id}) {
    EXPECT_THAT(listed.stdout_data, HasSubstr(line));
  }
  auto changed = cluster.TryQuery("UPDATE audit_log SET principal = 'nobody'");
  EXPECT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("audit_log is append-only"));
  EXPECT_FALSE(cluster.TryQuery("DELETE FROM audit_log").ok());

  std::string researcher = cluster.CreateToken("bob", "lab", {"researcher"}).token();
  SubprocessResult denied = Kforge(cluster, {"audit"}, researcher);
  EXPECT_THAT(denied.stderr_data,
              HasSubstr("may not read the audit trail: it needs the operator or admin role"));
}

TEST(SecurityTest, TenantQuotasBiteWithResourceExhausted) {
  Cluster cluster("sec_quota", /*gateway=*/false,
                  {"--tenant_max_active_jobs=1", "--tenant_max_queued_evaluations=2"});
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  std::string alice = cluster.CreateToken("alice", "lab", {"researcher"}).token();
  std::string carol = cluster.CreateToken("carol", "lab", {"researcher"}).token();
  std::string dave = cluster.CreateToken("dave", "elsewhere", {"researcher"}).token();
  v1::SubmitJobRequest job = ReluJobRequest(task, 1, 7);
  job.clear_seed_candidates();  // nothing queued by the jobs themselves
  job.set_gpu_types(0, "any");
  auto submit = [&](const std::string& token) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    v1::SubmitJobResponse resp;
    return cluster.StubWithToken(token)->SubmitJob(&ctx, job, &resp);
  };
  ASSERT_TRUE(submit(alice).ok());
  grpc::Status s = submit(carol);  // the same tenant
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(),
            "tenant lab has 1 jobs queued or running; its quota is 1; wait for one to finish or "
            "cancel one");
  EXPECT_TRUE(submit(dave).ok()) << "another tenant has its own quota";

  auto batch = [&](const std::string& token, int candidates) {
    v1::EvaluateBatchRequest req;
    req.set_task_id(task);
    for (int i = 0; i < candidates; ++i) {
      req.add_candidates()->set_source("class ModelNew: pass  # " + std::to_string(i) + "\n");
    }
    req.add_gpu_types("any");
    grpc::ClientContext ctx;
    SetDeadline(ctx, 2);
    auto reader = cluster.StubWithToken(token)->EvaluateBatch(&ctx, req);
    v1::EvaluationRecord rec;
    while (reader->Read(&rec)) {
    }
    return reader->Finish();  // DEADLINE_EXCEEDED once queued: no worker runs them
  };
  EXPECT_EQ(batch(alice, 2).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  s = batch(carol, 1);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(),
            "tenant lab has 2 evaluations queued; 1 more would pass its quota of 2; retry when "
            "some have run");
  EXPECT_EQ(batch(dave, 2).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

TEST(SecurityTest, TenantsReadOnlyTheirOwnAndThePublicSpace) {
  Cluster cluster("sec_tenants");
  ASSERT_NE(cluster.StartWorker("cpu"), nullptr);
  std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  std::string alice = cluster.CreateToken("alice", "lab", {"researcher"}).token();
  std::string eve = cluster.CreateToken("eve", "rival", {"researcher"}).token();
  std::string pub = cluster.CreateToken("shared", "public", {"researcher"}).token();
  v1::SubmitJobRequest job = ReluJobRequest(task, 1, 7);
  job.clear_seed_candidates();
  job.set_gpu_types(0, "any");
  std::string lab_job = SubmitJob(*cluster.StubWithToken(alice), job);
  std::string public_job = SubmitJob(*cluster.StubWithToken(pub), job);
  auto evaluate = [&](const std::string& token, const std::string& candidate) {
    v1::EvaluateBatchRequest req;
    req.set_task_id(task);
    req.add_candidates()->set_source(ReadSourceFile(candidate));
    req.add_gpu_types("cpu");
    std::vector<v1::EvaluationRecord> records;
    std::string batch_id;
    EXPECT_TRUE(ReadBatch(*cluster.StubWithToken(token), req, &records, &batch_id).ok());
    return batch_id;
  };
  std::string lab_batch = evaluate(alice, "examples/candidates/tiny_relu/correct.py");
  evaluate(pub, "examples/candidates/tiny_relu/torch_chunked.py");

  auto get_job = [&](const std::string& token, const std::string& id) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::Job out;
    return cluster.StubWithToken(token)->GetJob(&ctx, req, &out);
  };
  grpc::Status s = get_job(eve, lab_job);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "no job " + lab_job);
  EXPECT_TRUE(get_job(eve, public_job).ok());
  EXPECT_TRUE(get_job(alice, lab_job).ok());

  auto results = [&](const std::string& token) {
    grpc::ClientContext ctx;
    SetDeadline(ctx);
    v1::ResultsQuery q;
    q.set_task_id(task);
    v1::ResultsResponse resp;
    EXPECT_TRUE(cluster.StubWithToken(token)->QueryResults(&ctx, q, &resp).ok());
    return resp.evaluations_size();
  };
  EXPECT_EQ(results(alice), 2);  // lab's and public's
  EXPECT_EQ(results(eve), 1);    // public's only
  grpc::ClientContext best_ctx;
  SetDeadline(best_ctx);
  v1::BestCandidatesRequest best_req;
  best_req.set_task_id(task);
  best_req.set_limit(10);
  v1::BestCandidatesResponse best;
  ASSERT_TRUE(cluster.StubWithToken(eve)->GetBestCandidates(&best_ctx, best_req, &best).ok());
  EXPECT_EQ(best.sources_size(), 1);  // the public candidate's source, not lab's
  grpc::ClientContext list_ctx;
  SetDeadline(list_ctx);
  v1::ListJobsResponse listed;
  ASSERT_TRUE(
      cluster.StubWithToken(eve)->ListJobs(&list_ctx, v1::ListJobsRequest(), &listed).ok());
  ASSERT_EQ(listed.jobs_size(), 1);
  EXPECT_EQ(listed.jobs(0).job_id(), public_job);

  v1::EvaluateBatchRequest reattach;
  reattach.set_batch_id(lab_batch);
  std::vector<v1::EvaluationRecord> none;
  s = ReadBatch(*cluster.StubWithToken(eve), reattach, &none, nullptr, 10);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(none.empty());
}

TEST(SecurityTest, NothingSecretReachesACandidate) {
  // Secrets in the worker's own environment (as a careless deployment might put them), and
  // its token file: a candidate that prints its environment sees none of them.
  setenv("OPENAI_API_KEY", "sk-kforge-test-secret-openai", 1);
  setenv("PGPASSWORD", "kforge-test-secret-pg", 1);
  Cluster cluster("sec_env");
  ServiceProcess* worker = cluster.StartWorker("cpu");
  unsetenv("OPENAI_API_KEY");
  unsetenv("PGPASSWORD");
  ASSERT_NE(worker, nullptr);
  v1::EvaluationRecord rec = EvaluateOnCpu(cluster, "tests/security/env_probe.py");
  const std::string& printed = rec.result().output_log();
  ASSERT_THAT(printed, HasSubstr("PROC_ENVIRON")) << rec.result().reason();
  ASSERT_THAT(printed, HasSubstr("PATH="));  // it did read its environment
  for (const std::string& secret : {std::string("sk-kforge-test-secret-openai"),
                                    std::string("kforge-test-secret-pg"), cluster.worker_token(),
                                    std::string("KFORGE_TOKEN"), std::string("postgresql://")}) {
    EXPECT_THAT(printed, ::testing::Not(HasSubstr(secret)));
  }
}

// grpc.health.v1 of `address` through a client verifying against `ca_file` ("" with
// `insecure`): "SERVING", or the call's error.
std::string HealthWith(const std::string& address, const std::string& ca_file, bool insecure) {
  TlsSettings tls;
  tls.ca_file = ca_file;
  tls.insecure = insecure;
  auto stub = grpc::health::v1::Health::NewStub(MakeChannel(address, {"", tls}));
  grpc::ClientContext ctx;
  SetDeadline(ctx, 5);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status s = stub->Check(&ctx, grpc::health::v1::HealthCheckRequest(), &resp);
  return s.ok() ? "SERVING" : "error: " + s.error_message();
}

void CopyFile(const std::string& from, const std::string& to) {
  std::filesystem::copy_file(from, to + ".new", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(to + ".new", to);
}

TEST(SecurityTest, TlsIsRequiredUnlessAskedForAndCertificatesReloadWithoutARestart) {
  auto url = PgTestEnvironment::server().CreateDatabase("sec_tls");
  ASSERT_TRUE(url.ok()) << url.status();
  // Without a certificate and without --insecure the coordinator does not start.
  SpawnOptions o;
  o.argv = {BuiltBinary("coordinator/kforge-coordinator"), "--database_url=" + *url,
            "--grpc_address=127.0.0.1:0", "--metrics_address=127.0.0.1:0"};
  o.wall_limit_s = 60;
  SubprocessResult refused = RunSubprocess(std::move(o));
  EXPECT_EQ(refused.exit_code, 1) << refused.Describe();
  EXPECT_THAT(refused.stderr_data,
              HasSubstr("TLS needs --tls_cert_file and --tls_key_file (or --insecure"));

  TempDir dir;
  auto first = TestPki::Create(dir.path(), "first");
  auto second = TestPki::Create(dir.path(), "second");
  ASSERT_TRUE(first.ok() && second.ok()) << first.status() << second.status();
  const std::string cert = dir.path() + "/serving.pem", key = dir.path() + "/serving.key";
  CopyFile(first->cert_file, cert);
  CopyFile(first->key_file, key);
  auto coordinator = ServiceProcess::Start(
      BuiltBinary("coordinator/kforge-coordinator"),
      {"--database_url=" + *url, "--tls_cert_file=" + cert, "--tls_key_file=" + key,
       "--tls_reload_s=1"});
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  const std::string address = (*coordinator)->grpc_address();
  EXPECT_EQ(HealthWith(address, first->ca_file, false), "SERVING");
  EXPECT_THAT(HealthWith(address, second->ca_file, false), StartsWith("error: "));
  EXPECT_THAT(HealthWith(address, "", /*insecure=*/true), StartsWith("error: "));

  // Rotated in place: the running coordinator serves the new certificate.
  CopyFile(second->key_file, key);
  CopyFile(second->cert_file, cert);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (HealthWith(address, second->ca_file, false) != "SERVING" &&
         std::chrono::steady_clock::now() < deadline) {
  }
  EXPECT_EQ(HealthWith(address, second->ca_file, false), "SERVING");
  EXPECT_THAT(HealthWith(address, first->ca_file, false), StartsWith("error: "));

  // Plaintext only when asked for, with a warning.
  auto plain = ServiceProcess::Start(BuiltBinary("coordinator/kforge-coordinator"),
                                     {"--database_url=" + *url, "--insecure"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(HealthWith((*plain)->grpc_address(), "", /*insecure=*/true), "SERVING");
  EXPECT_THAT((*plain)->log(), HasSubstr("serving gRPC in plaintext (--insecure)"));
}

}  // namespace
}  // namespace kforge
