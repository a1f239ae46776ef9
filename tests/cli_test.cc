// The kforge CLI against a real coordinator: its output and its exit codes (0 success,
// 1 the server said no, 2 bad usage or input, 3 the server could not be reached).
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/channel.h"
#include "common/pg.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kforge/v1/jobs.grpc.pb.h"
#include "tests/loopback.h"
#include "tests/pg_harness.h"
#include "tests/rogue_worker.h"
#include "tests/service_process.h"
#include "tests/test_pki.h"
#include "tests/test_tokens.h"

namespace kforge {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// gtest owns the environment.
::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

constexpr int kExitRpcError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

constexpr char kSigmoidTask[] = R"py(import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)


def get_inputs():
    return [torch.randn(128, 128)]


def get_init_inputs():
    return []
)py";

class CliTest : public ::testing::Test {
 protected:
  // One coordinator for the suite: the CLI commands do not interfere with each other.
  static void SetUpTestSuite() {
    auto url = PgTestEnvironment::server().CreateDatabase("cli");
    ASSERT_TRUE(url.ok()) << url.status();
    database_url_ = *url;
    tokens_ = new TestTokens();
    auto started = ServiceProcess::Start(
        BuiltBinary("coordinator/kforge-coordinator"),
        {"--database_url=" + *url, "--db_pool_size=4", tokens_->BootstrapFlag()});
    ASSERT_TRUE(started.ok()) << started.status();
    coordinator_ = std::move(started).value();
    const std::string address = coordinator_->grpc_address();
    user_token_ = tokens_->Create(address, "cli-user", "default", {"researcher", "operator"}).token();
    worker_token_ = tokens_->Create(address, "cli-node", "default", {"worker"}).token();
    worker_token_file_ = tokens_->File("worker.token", worker_token_);
  }
  static void TearDownTestSuite() {
    coordinator_.reset();
    delete tokens_;
  }

  void SetUp() override { ASSERT_NE(coordinator_, nullptr) << "the coordinator did not start"; }

  static SubprocessResult Kforge(std::vector<std::string> args) {
    SpawnOptions o;
    o.argv = {BuiltBinary("cli/kforge")};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    // A researcher and operator, verifying the coordinator against the test CA.
    o.env = {"KFORGE_TOKEN=" + user_token_, "KFORGE_TLS_CA_FILE=" + TestPki::Shared().ca_file};
    o.wall_limit_s = 60;
    SubprocessResult r = RunSubprocess(std::move(o));
    EXPECT_TRUE(r.started) << r.error;
    EXPECT_FALSE(r.timed_out) << "kforge " << args.front() << " hung";
    return r;
  }

  static std::string CoordinatorFlag() { return "--coordinator=" + coordinator_->grpc_address(); }

  std::string WriteFile(const std::string& name, const std::string& content) {
    std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << content;
    return path;
  }

  static std::unique_ptr<ServiceProcess> coordinator_;
  static TestTokens* tokens_;
  static std::string database_url_, user_token_, worker_token_, worker_token_file_;
  TempDir dir_;
};

std::unique_ptr<ServiceProcess> CliTest::coordinator_;
TestTokens* CliTest::tokens_ = nullptr;
std::string CliTest::database_url_, CliTest::user_token_, CliTest::worker_token_,
    CliTest::worker_token_file_;

std::string LineContaining(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  size_t begin = text.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

std::string ClosedPortAddress() {
  auto port = UnusedLoopbackPort();
  EXPECT_TRUE(port.ok()) << port.status();
  return absl::StrCat("127.0.0.1:", port.ok() ? *port : 1);
}

TEST_F(CliTest, HealthOfARunningServerIsServing) {
  SubprocessResult r = Kforge({"health", coordinator_->grpc_address()});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "SERVING\n");
}

TEST_F(CliTest, HealthOfAClosedPortIsUnreachable) {
  SubprocessResult r = Kforge({"health", ClosedPortAddress(), "--timeout_s=5"});
  EXPECT_EQ(r.exit_code, kExitUnreachable) << r.Describe();
  EXPECT_THAT(r.stderr_data, HasSubstr("kforge: "));
  EXPECT_EQ(r.stdout_data, "");
}

TEST_F(CliTest, TaskAddPrintsTheIdAndIsIdempotent) {
  std::string path = WriteFile("sigmoid.py", kSigmoidTask);
  const std::string id = Sha256Hex(kSigmoidTask);

  SubprocessResult first = Kforge({"task", "add", path, CoordinatorFlag()});
  EXPECT_EQ(first.exit_code, 0) << first.stderr_data;
  EXPECT_EQ(first.stdout_data, id + "\tsigmoid\tcreated\n");

  SubprocessResult again = Kforge({"task", "add", path, "--name=renamed", CoordinatorFlag()});
  EXPECT_EQ(again.exit_code, 0) << again.stderr_data;
  EXPECT_EQ(again.stdout_data, id + "\trenamed\texists\n");
}

TEST_F(CliTest, TaskAddOfAMalformedTaskReportsTheServersReason) {
  std::string path = WriteFile("broken.py", "print('not a task')\n");
  SubprocessResult r = Kforge({"task", "add", path, CoordinatorFlag()});
  EXPECT_EQ(r.exit_code, kExitRpcError) << r.Describe();
  EXPECT_THAT(r.stderr_data, HasSubstr("not a KernelBench task: missing top-level class Model"));
}

TEST_F(CliTest, TaskAddOfAMissingFileIsAUsageError) {
  SubprocessResult r = Kforge({"task", "add", dir_.path() + "/absent.py", CoordinatorFlag()});
  EXPECT_EQ(r.exit_code, kExitUsage) << r.Describe();
  EXPECT_THAT(r.stderr_data, HasSubstr("cannot read"));
}

TEST_F(CliTest, TaskAddWithoutACoordinatorIsUnreachable) {
  std::string path = WriteFile("sigmoid.py", kSigmoidTask);
  SubprocessResult r =
      Kforge({"task", "add", path, "--coordinator=" + ClosedPortAddress(), "--timeout_s=5"});
  EXPECT_EQ(r.exit_code, kExitUnreachable) << r.Describe();
}

TEST_F(CliTest, UnknownCommandPrintsUsage) {
  SubprocessResult r = Kforge({"frobnicate"});
  EXPECT_EQ(r.exit_code, kExitUsage) << r.Describe();
  EXPECT_THAT(r.stderr_data, HasSubstr("kforge task add FILE"));
}

TEST_F(CliTest, AConfigFileGivesTheCoordinatorTokenAndCaUnderFlagsAndEnvironment) {
  std::string token_file = WriteFile("user.token", user_token_ + "\n");
  std::string config = WriteFile(
      "config", "# kforge client settings\ncoordinator = " + coordinator_->grpc_address() +
                    "\ntoken_file = " + token_file + "\ntls_ca_file = " +
                    TestPki::Shared().ca_file + "\n");
  SpawnOptions o;
  o.argv = {BuiltBinary("cli/kforge"), "workers"};
  o.env = {"KFORGE_CONFIG=" + config};
  o.wall_limit_s = 60;
  SubprocessResult r = RunSubprocess(o);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_THAT(r.stdout_data, StartsWith("WORKER"));
  // The command line wins over the file.
  o.argv = {BuiltBinary("cli/kforge"), "workers", "--coordinator=" + ClosedPortAddress(),
            "--timeout_s=5"};
  r = RunSubprocess(o);
  EXPECT_EQ(r.exit_code, kExitUnreachable) << r.Describe();
  // A line that is not `flag = value` of a kforge flag is refused.
  o.argv = {BuiltBinary("cli/kforge"), "workers"};
  o.env = {"KFORGE_CONFIG=" + WriteFile("bad", "tokenfile = x\n")};
  r = RunSubprocess(o);
  EXPECT_EQ(r.exit_code, kExitUsage);
  EXPECT_THAT(r.stderr_data, HasSubstr("bad:1: want `flag = value`"));
}

TEST_F(CliTest, WorkersListsARegisteredWorker) {
  auto worker = ServiceProcess::Start(
      BuiltBinary("gpu_worker/kforge-worker"),
      {"--coordinator=" + coordinator_->grpc_address(), "--gpu_type=cli-test-gpu", "--slots=2",
       "--token_file=" + worker_token_file_});
  ASSERT_TRUE(worker.ok()) << worker.status();

  // Registration is asynchronous: poll the listing, bounded.
  SubprocessResult r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    r = Kforge({"workers", CoordinatorFlag()});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
    if (r.stdout_data.find("cli-test-gpu") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_THAT(r.stdout_data, StartsWith("WORKER"));
  std::string line = LineContaining(r.stdout_data, "cli-test-gpu");
  ASSERT_FALSE(line.empty()) << r.stdout_data << "\nworker log:\n" << (*worker)->log();
  // WORKER HOST GPU SLOTS LEASES ALIVE LAST-HEARTBEAT
  EXPECT_THAT(line, ContainsRegex("cli-test-gpu +2 +0 +yes +[0-9]{4}-"));
}

void SetTiming(v1::TimingStats* t, double median, bool capped = false) {
  t->set_median_ms(median);
  t->set_min_ms(median);
  t->set_max_ms(median);
  t->set_n(10);
  t->set_capped(capped);
}

// What an engine reports for a correct candidate of a task timed by the call clock: 1.6x by
// the call clock (speedup), 2x by the device clock.
v1::EvalResult CallClockResult() {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_OK);
  r.mutable_correctness()->set_trials(5);
  r.mutable_correctness()->set_trials_passed(5);
  SetTiming(r.mutable_reference_call(), 2.4);
  SetTiming(r.mutable_candidate_call(), 1.5, /*capped=*/true);
  SetTiming(r.mutable_reference_device(), 2.0);
  SetTiming(r.mutable_candidate_device(), 1.0);
  *r.mutable_reference() = r.reference_call();
  *r.mutable_candidate() = r.candidate_call();
  r.set_speedup(1.6);
  r.set_speedup_call(1.6);
  r.set_speedup_device(2.0);
  r.set_speedup_clock("call");
  r.set_speedup_ci_low(1.5);
  r.set_speedup_ci_high(1.7);
  return r;
}

// A task asking for the call clock: the option reaches the worker's lease, the results the
// worker returns are stored with both clocks, and `kforge results` shows them.
TEST_F(CliTest, ResultsShowTheClockOfEachSpeedupAndBothSpeedups) {
  auto stub = v1::JobService::NewStub(
      MakeChannel(coordinator_->grpc_address(), {user_token_, TestPki::Shared().Client()}));
  v1::SubmitTaskRequest task;
  task.set_name("sigmoid-call-clock");
  task.set_source(std::string(kSigmoidTask) + "# timed by the call clock\n");
  task.mutable_options()->set_speedup_clock("wall");
  v1::SubmitTaskResponse submitted;
  {
    grpc::ClientContext ctx;
    grpc::Status s = stub->SubmitTask(&ctx, task, &submitted);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "options.speedup_clock must be device or call, not 'wall'");
  }
  task.mutable_options()->set_speedup_clock("call");
  {
    grpc::ClientContext ctx;
    grpc::Status s = stub->SubmitTask(&ctx, task, &submitted);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  RogueWorker worker(coordinator_->grpc_address(), "cli-clock-gpu", worker_token_);
  ASSERT_TRUE(worker.registered().ok()) << worker.registered().error_message();
  v1::EvaluateBatchRequest batch;
  batch.set_task_id(submitted.task_id());
  for (const char* ref : {"fast.py", "broken.py"}) {
    v1::CandidateSpec* c = batch.add_candidates();
    c->set_source(absl::StrCat("class ModelNew:  # ", ref, "\n    pass\n"));
    c->set_client_ref(ref);
  }
  batch.add_gpu_types("cli-clock-gpu");
  grpc::ClientContext batch_ctx;
  batch_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto results = stub->EvaluateBatch(&batch_ctx, batch);
  results->WaitForInitialMetadata();  // queued

  ASSERT_TRUE(worker.Connect());
  for (int i = 0; i < 2; ++i) {
    std::string lease = worker.TakeLease();
    ASSERT_FALSE(lease.empty());
    EXPECT_EQ(worker.leased_request().speedup_clock(), "call");
    v1::EvalResult result;
    if (worker.leased_request().candidate_source().find("fast.py") != std::string::npos) {
      result = CallClockResult();
    } else {
      result.set_verdict(v1::VERDICT_COMPILE_ERROR);
      result.set_reason("SyntaxError");
      result.set_speedup_clock("call");
    }
    ASSERT_TRUE(worker.Send(lease, result));
  }
  v1::EvaluationRecord rec;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(results->Read(&rec)) << "result " << i;
  batch_ctx.TryCancel();
  worker.Close();

  // The columns of both clocks, as stored.
  auto db = PgConnection::Connect(database_url_);
  ASSERT_TRUE(db.ok()) << db.status();
  auto rows = (*db)->Exec(
      "SELECT client_ref || ' ' || verdict || ' ' || coalesce(speedup::text, '-') || ' ' || "
      "  coalesce(speedup_clock, '-') || ' ' || coalesce(speedup_device::text, '-') || ' ' || "
      "  coalesce(speedup_call::text, '-') || ' ' || "
      "  coalesce(nullif(concat_ws('/', reference_device_ms, candidate_device_ms, "
      "    reference_call_ms, candidate_call_ms), ''), '-') || ' ' || "
      "  coalesce(speedup_ci_low || '-' || speedup_ci_high, '-') || ' ' || "
      "  native_code::text || ' ' || coalesce(timing_capped::text, '-') "
      "FROM evaluations WHERE ran_on_gpu_type = 'cli-clock-gpu' ORDER BY client_ref");
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->rows(), 2);
  EXPECT_EQ(rows->Get(0, 0), "broken.py compile_error - call - - - - false -");
  EXPECT_EQ(rows->Get(1, 0), "fast.py ok 1.6 call 2 1.6 2/1/2.4/1.5 1.5-1.7 false true");

  SubprocessResult r = Kforge({"results", "--gpu=cli-clock-gpu", CoordinatorFlag()});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_THAT(r.stdout_data, ContainsRegex("^# +CANDIDATE +GPU +VERDICT +SPEEDUP +CLOCK +DEV "
                                           "+CALL +REF_MS +CAND_MS +REASON\n"));
  // # CANDIDATE GPU VERDICT SPEEDUP CLOCK DEV CALL REF_MS CAND_MS REASON
  EXPECT_THAT(LineContaining(r.stdout_data, "fast.py"),
              ContainsRegex("fast.py +cli-clock-gpu +ok +1.60000 +call +2.00000 +1.60000 "
                            "+2.4000 +1.5000 *$"));
  EXPECT_THAT(LineContaining(r.stdout_data, "broken.py"),
              ContainsRegex("broken.py +cli-clock-gpu +compile_error +- +call +- +- +0.0000 "
                            "+0.0000 +SyntaxError$"));
}

}  // namespace
}  // namespace kforge
