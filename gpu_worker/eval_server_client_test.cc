// The fork server through the worker's client, in CPU mode with the real kforge-eval in the
// real sandbox: several requests in one server, verdicts for a hang and an output flood without
// losing the server, a lazy restart after the server is killed, and no server at all.
#include "gpu_worker/eval_server_client.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/base/files.h"
#include "gpu_worker/eval_view.h"

namespace kforge {
namespace {

std::string Source(const std::string& rel) {
  return ReadFileOrEmpty(std::string(std::getenv("KFORGE_SOURCE_DIR")) + "/" + rel);
}

v1::EvalRequest Request(const std::string& candidate) {
  v1::EvalRequest r;
  r.set_task_source(Source("examples/tasks/tiny/tiny_relu.py"));
  r.set_candidate_source(Source(candidate));
  r.set_device("cpu");
  r.mutable_limits()->set_correctness_s(3);
  return r;
}

class EvalServerClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kforge-server-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    scratch_ = tmpl;
    config_.policy.scratch_root = scratch_;
    config_.policy.run_as_user = "";  // the build tree need not be readable by nobody
    config_.eval_binary =
        std::string(std::getenv("KFORGE_BINARY_DIR")) + "/gpu_worker/eval/kforge-eval";
    config_.cache_dir = scratch_ + "/cache";
    // The view as the worker configures it (eval_view.h), the cache in it.
    ASSERT_EQ(mkdir(config_.cache_dir.c_str(), 0755), 0);
    config_.policy.executables = DefaultCompilerExecutables();
    ASSERT_TRUE(AddEnginePaths(config_.eval_binary, config_.cache_dir, &config_.policy.view,
                               &config_.policy.executables)
                    .ok());
  }
  void TearDown() override { std::system(("rm -rf " + scratch_).c_str()); }

  v1::EvalResult MustEvaluate(EvalServerClient& client, const v1::EvalRequest& request) {
    std::string why;
    auto r = client.Evaluate(request, 300, &why);
    EXPECT_TRUE(r.has_value()) << why;
    return r.value_or(v1::EvalResult());
  }
  v1::EvalResult MustEvaluate(EvalServerClient& client, const std::string& candidate) {
    return MustEvaluate(client, Request(candidate));
  }

  std::string scratch_;
  EvalServerConfig config_;
};

// load_inline finds its build directory through os.environ, which a fork server's Python
// copied when it started: the engine must set it there for every request, not only in the C
// environment (else every evaluation builds again in its own scratch HOME).
TEST_F(EvalServerClientTest, CandidatesSeeTheBuildCacheInOsEnviron) {
  EvalServerClient client(config_);
  v1::EvalRequest request = Request("examples/candidates/tiny_relu/correct.py");
  request.set_dialect(v1::DIALECT_KERNELBENCH);
  request.set_candidate_source(
      "from torch.utils.cpp_extension import _get_build_directory\n"
      "_dir = _get_build_directory('kforge_probe', False)\n"
      "if not _dir.startswith('" + config_.cache_dir + "/'):\n"
      "    raise RuntimeError('load_inline would build in ' + _dir)\n" +
      request.candidate_source());
  for (int i = 0; i < 2; ++i) {  // the second request is a fresh child of the same server
    v1::EvalResult r = MustEvaluate(client, request);
    EXPECT_EQ(r.verdict(), v1::VERDICT_OK) << r.reason();
  }
}

// Where an ok evaluation's timing went (StageDurations.timing_*): every part of the loop's work
// is there, and the parts fit inside the stage (CPU mode: the call clock only).
TEST_F(EvalServerClientTest, TheTimingStageSaysWhereItsTimeWent) {
  EvalServerClient client(config_);
  v1::EvalResult r = MustEvaluate(client, "examples/candidates/tiny_relu/correct.py");
  ASSERT_EQ(r.verdict(), v1::VERDICT_OK) << r.reason();
  const v1::StageDurations& st = r.stages();
  EXPECT_EQ(st.timing_device_s(), 0) << "no device clock in CPU mode";
  EXPECT_GT(st.timing_call_s(), 0);
  EXPECT_LE(st.timing_call_s(), st.timing_s());
  EXPECT_GT(st.timing_inputs_s(), 0);
  EXPECT_GT(st.timing_reference_s(), 0);
  EXPECT_GT(st.timing_candidate_s(), 0);
  EXPECT_GT(st.timing_checks_s(), 0);
  EXPECT_LE(st.timing_inputs_s() + st.timing_reference_s() + st.timing_candidate_s() +
                st.timing_checks_s(),
            st.timing_call_s());
}

TEST_F(EvalServerClientTest, OneServerSurvivesHangsAndFloods) {
  EvalServerClient client(config_);
  EXPECT_EQ(MustEvaluate(client, "examples/candidates/tiny_relu/correct.py").verdict(),
            v1::VERDICT_OK);
  pid_t pid = client.server_pid();
  ASSERT_GT(pid, 0);
  v1::EvalResult hang = MustEvaluate(client, "examples/candidates/tiny_relu/hangs.py");
  EXPECT_EQ(hang.verdict(), v1::VERDICT_TIMEOUT);
  EXPECT_NE(hang.reason().find("stage correctness exceeded its 3 s limit"), std::string::npos)
      << hang.reason();
  EXPECT_GE(hang.stages().correctness_s(), 3.0) << "the supervisor keeps the stages it saw";
  EXPECT_GT(hang.stages().total_s(), hang.stages().correctness_s());
  v1::EvalResult flood = MustEvaluate(client, "examples/hacks/output_flood.py");
  EXPECT_EQ(flood.verdict(), v1::VERDICT_RUNTIME_ERROR);
  EXPECT_EQ(flood.rule(), "output_flood");
  v1::EvalResult again = MustEvaluate(client, "examples/candidates/tiny_relu/correct.py");
  EXPECT_EQ(again.verdict(), v1::VERDICT_OK);
  EXPECT_TRUE(again.system().cache_isolated()) << "Landlock under the sandbox's seccomp filter";
  EXPECT_LT(again.stages().startup_s(), 1.0) << "a forked request does not import torch";
  EXPECT_EQ(client.server_pid(), pid) << "every request went to the same server";
}

TEST_F(EvalServerClientTest, EachRequestGetsAScratchDirectoryThatIsRemoved) {
  EvalServerClient client(config_);
  v1::EvalRequest request = Request("examples/candidates/tiny_relu/correct.py");
  request.set_candidate_source(R"(import tempfile
import torch
import torch.nn as nn
_left_behind = tempfile.mkdtemp()
print("kforge-tmp", tempfile.gettempdir())
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
)");
  v1::EvalResult r = MustEvaluate(client, request);
  EXPECT_EQ(r.verdict(), v1::VERDICT_OK) << r.reason();
  EXPECT_NE(r.output_log().find("/kforge-req-"), std::string::npos) << r.output_log();
  int sandboxes = 0;
  for (const auto& sandbox : std::filesystem::directory_iterator(scratch_)) {
    if (sandbox.path().filename().string().rfind("kforge-sandbox-", 0) != 0) continue;
    ++sandboxes;
    for (const auto& entry : std::filesystem::directory_iterator(sandbox.path())) {
      EXPECT_EQ(entry.path().filename().string().rfind("kforge-req-", 0), std::string::npos)
          << entry.path() << " outlived its request";
    }
  }
  EXPECT_EQ(sandboxes, 1) << "the server's own sandbox";
}

// The sandbox's /dev/shm is its own, but one server serves many requests: what an evaluation
// leaves there is removed before the next (serve.h, --clear-dev-shm), or it would be a channel
// from one evaluation to the next (red team, session 29).
TEST_F(EvalServerClientTest, NothingAnEvaluationLeftInDevShmReachesTheNext) {
  if (geteuid() != 0) GTEST_SKIP() << "the sandbox's own /dev/shm needs its mount namespace";
  EvalServerConfig config = config_;
  config.policy.require_namespaces = true;  // as a root worker's defaults: the view is built
  EvalServerClient client(config);
  v1::EvalRequest request = Request("examples/candidates/tiny_relu/correct.py");
  request.set_candidate_source(R"(import os
import torch
import torch.nn as nn
print("kforge-shm", sorted(os.listdir("/dev/shm")), flush=True)
os.makedirs("/dev/shm/kforge-plant-dir/sub", exist_ok=True)
with open("/dev/shm/kforge-plant", "w") as f:
    f.write("planted")
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
)");
  for (int i = 0; i < 2; ++i) {
    v1::EvalResult r = MustEvaluate(client, request);
    EXPECT_EQ(r.verdict(), v1::VERDICT_OK) << r.reason();
    EXPECT_NE(r.output_log().find("kforge-shm []"), std::string::npos)
        << "request " << i + 1 << ": " << r.output_log();
    EXPECT_FALSE(r.server_stops());
  }
  // A sandbox that may run without namespaces builds no view where it cannot have them, and
  // then its /dev/shm is the machine's, other lanes' files included: nothing is cleared.
  EvalServerConfig optional = config_;
  optional.policy.require_namespaces = false;
  EvalServerClient unsure(optional);
  v1::EvalResult first = MustEvaluate(unsure, request);
  v1::EvalResult second = MustEvaluate(unsure, request);
  EXPECT_EQ(second.verdict(), v1::VERDICT_OK) << second.reason();
  EXPECT_EQ(second.output_log().find("kforge-shm []"), std::string::npos)
      << "without required namespaces the server does not clear /dev/shm: " << second.output_log();
}

TEST_F(EvalServerClientTest, StartsAFreshServerAfterItWasKilled) {
  EvalServerClient client(config_);
  EXPECT_EQ(MustEvaluate(client, "examples/candidates/tiny_relu/correct.py").verdict(),
            v1::VERDICT_OK);
  pid_t first = client.server_pid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(kill(-first, SIGKILL), 0);
  // The request right after the kill may still find the dead server (then it reports why);
  // the one after that runs in a new server.
  std::string why;
  auto maybe = client.Evaluate(Request("examples/candidates/tiny_relu/correct.py"), 300, &why);
  if (!maybe) {
    EXPECT_NE(why.find("server ended"), std::string::npos) << why;
  }
  EXPECT_EQ(MustEvaluate(client, "examples/candidates/tiny_relu/wrong.py").verdict(),
            v1::VERDICT_INCORRECT);
  EXPECT_GT(client.server_pid(), 0);
  EXPECT_NE(client.server_pid(), first);
}

TEST_F(EvalServerClientTest, ReportsWhyWhenNoServerCanRun) {
  config_.eval_binary = scratch_ + "/no-such-kforge-eval";
  config_.start_timeout_s = 30;
  EvalServerClient client(config_);
  std::string why;
  EXPECT_FALSE(client.Evaluate(Request("examples/candidates/tiny_relu/correct.py"), 60, &why));
  EXPECT_NE(why.find("server"), std::string::npos) << why;
  EXPECT_EQ(client.server_pid(), -1);
}

}  // namespace
}  // namespace kforge
