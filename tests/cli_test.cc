// The kforge CLI against a real coordinator: its output and its exit codes (0 success,
// 1 the server said no, 2 bad usage or input, 3 the server could not be reached).
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/loopback.h"
#include "tests/pg_harness.h"
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
    tokens_ = new TestTokens();
    auto started = ServiceProcess::Start(
        BuiltBinary("coordinator/kforge-coordinator"),
        {"--database_url=" + *url, "--db_pool_size=4", tokens_->BootstrapFlag()});
    ASSERT_TRUE(started.ok()) << started.status();
    coordinator_ = std::move(started).value();
    const std::string address = coordinator_->grpc_address();
    user_token_ = tokens_->Create(address, "cli-user", "default", {"researcher", "operator"}).token();
    worker_token_file_ = tokens_->File(
        "worker.token", tokens_->Create(address, "cli-node", "default", {"worker"}).token());
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
  static std::string user_token_, worker_token_file_;
  TempDir dir_;
};

std::unique_ptr<ServiceProcess> CliTest::coordinator_;
TestTokens* CliTest::tokens_ = nullptr;
std::string CliTest::user_token_, CliTest::worker_token_file_;

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

}  // namespace
}  // namespace kforge
