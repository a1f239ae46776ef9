// The allow-list of LLM endpoints end to end (docs/security.md, "LLM endpoints"): a real
// coordinator and gateway, two scripted providers. A job whose llm.base_url the gateway's
// --allowed_base_urls does not allow is refused when it is submitted, with the gateway's
// reason, and nothing is POSTed to that address; a job naming an allowed endpoint runs its
// rounds against it, and the gateway's provider key never goes there.
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"
#include "tests/fake_llm_server.h"
#include "tests/pg_harness.h"

namespace kforge {
namespace {

using ::testing::HasSubstr;

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

constexpr char kKey[] = "sk-allowlist-test-key-must-not-leave";

grpc::Status Submit(v1::JobService::Stub& stub, const v1::SubmitJobRequest& req,
                    v1::SubmitJobResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(20));
  return stub.SubmitJob(&ctx, req, resp);
}

TEST(LlmEndpointTest, AJobNamingAnEndpointOutsideTheAllowListIsRefusedAtSubmission) {
  auto allowed = FakeLlmServer::Start();
  auto evil = FakeLlmServer::Start();
  ASSERT_TRUE(allowed.ok() && evil.ok());
  FakeReply reply;
  reply.completion = CompletionWithCode(
      "Analysis: fine.", ReadSourceFile("examples/candidates/tiny_relu/torch_chunked.py"));
  (*allowed)->SetDefault(reply);
  (*evil)->SetDefault(reply);
  // The key is the openai provider's, bound to its own endpoint (the default public one).
  setenv("OPENAI_API_KEY", kKey, 1);
  Cluster cluster("llm_allowlist", /*gateway=*/true, {},
                  {"--allowed_base_urls=" + (*allowed)->base_url() + "/v1"});
  unsetenv("OPENAI_API_KEY");
  const std::string task = cluster.SubmitTask("examples/tasks/tiny/tiny_relu.py");
  auto stub = cluster.Stub();

  v1::SubmitJobRequest job = ReluJobRequest(task, 1, 3);
  job.clear_seed_candidates();  // the first round asks the LLM at once
  job.mutable_llm()->set_provider("openai");
  job.mutable_llm()->set_model("served-model");
  const std::string evil_url = (*evil)->base_url();
  const std::string evil_hostport = evil_url.substr(std::string("http://").size());
  for (const std::string& url :
       {evil_url, evil_url + "/v1",
        // userinfo naming the allowed server before the real host
        (*allowed)->base_url() + "@" + evil_hostport + "/v1",
        // the allowed path prefix, not on a segment boundary
        (*allowed)->base_url() + "/v10"}) {
    job.mutable_llm()->set_base_url(url);
    v1::SubmitJobResponse resp;
    grpc::Status s = Submit(*stub, job, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << url;
    EXPECT_THAT(s.error_message(), HasSubstr("is not an allowed LLM endpoint")) << url;
    EXPECT_EQ(resp.job_id(), "");
  }
  EXPECT_EQ(cluster.Query("SELECT count(*) FROM jobs").Get(0, 0), "0");

  job.mutable_llm()->set_base_url((*allowed)->base_url() + "/v1");
  const std::string job_id = SubmitJob(*stub, job);
  ASSERT_FALSE(job_id.empty());
  EXPECT_TRUE(cluster.WaitFor(
      "SELECT count(*) >= 2 FROM llm_calls WHERE provider = 'openai' AND job_id = '" + job_id + "'",
      "t"))
      << cluster.gateway()->log();
  ASSERT_GE((*allowed)->requests().size(), 2u);
  for (const RecordedRequest& r : (*allowed)->requests()) {
    EXPECT_EQ(r.path, "/v1/chat/completions");
    EXPECT_EQ(r.headers.count("authorization"), 0u);  // the key stays with its endpoint
    EXPECT_THAT(r.body, HasSubstr("served-model"));
  }
  EXPECT_TRUE((*evil)->requests().empty());
  EXPECT_THAT(cluster.gateway()->log(), testing::Not(HasSubstr(kKey)));

  grpc::ClientContext ctx;
  ctx.set_deadline(In(20));
  v1::CancelJobRequest cancel;
  cancel.set_job_id(job_id);
  v1::CancelJobResponse cancelled;
  EXPECT_TRUE(stub->CancelJob(&ctx, cancel, &cancelled).ok());
}

}  // namespace
}  // namespace kforge
