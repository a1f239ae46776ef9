// The gateway against a scripted provider (fake_llm_server.h) and a real PostgreSQL: both
// wire protocols, retries on 429 and 5xx, timeouts, malformed replies, unusable completions,
// the llm_calls rows each case leaves, the concurrency cap, and the API key staying out of
// rows and logs. Then the real kforge-gateway binary over gRPC on loopback.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/pg.h"
#include "common/secrets.h"
#include "common/channel.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kforge/v1/gateway.grpc.pb.h"
#include "llm_gateway/call_accounting.h"
#include "llm_gateway/generator.h"
#include "llm_gateway/http_transport.h"
#include "llm_gateway/pg_call_log.h"
#include "llm_gateway/provider_client.h"
#include "migrations/migrator.h"
#include "nlohmann/json.hpp"
#include "prometheus/registry.h"
#include "tests/fake_llm_server.h"
#include "tests/loopback.h"
#include "tests/pg_harness.h"
#include "tests/service_process.h"
#include "tests/test_pki.h"
#include "tests/source_file.h"

namespace kforge::gateway {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

::testing::Environment* const kPgEnvironment =
    ::testing::AddGlobalTestEnvironment(new PgTestEnvironment());

constexpr char kKey[] = "sk-test-SECRET-4242";

std::string Task() { return ReadSourceFile("examples/tasks/tiny/tiny_relu.py"); }

std::string Candidate(int variant) {
  return absl::StrCat(R"(# kforge: dialect=nvrtc
import torch
import torch.nn as nn
from kforge import cuda

_mod = cuda.compile(r'''extern "C" __global__ void relu(const float* x, float* y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}''')
BLOCK = )",
                      128 * variant, R"(


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _mod.relu(grid=((n + BLOCK - 1) // BLOCK,), block=(BLOCK,), args=(x, y, n))
        return y
)");
}

std::string MigratedDatabase(const std::string& name) {
  auto url = PgTestEnvironment::server().CreateDatabase(name);
  EXPECT_TRUE(url.ok()) << url.status();
  if (!url.ok()) return "";
  auto conn = PgConnection::Connect(*url);
  EXPECT_TRUE(conn.ok()) << conn.status();
  if (!conn.ok()) return "";
  auto applied = ApplyMigrations(**conn, EmbeddedMigrations());
  EXPECT_TRUE(applied.ok()) << applied.status();
  return *url;
}

struct CallRow {
  std::string job_id, provider, model, status, error;
  int64_t tokens_in, tokens_out;
  double cost_usd;
};

std::vector<CallRow> Rows(PgPool& pool) {
  auto rows = pool.Exec(
      "SELECT coalesce(job_id::text, '') AS job_id, provider, model, status, "
      "coalesce(error, '') AS error, tokens_in, tokens_out, cost_usd::double precision AS cost "
      "FROM llm_calls ORDER BY call_id");
  EXPECT_TRUE(rows.ok()) << rows.status();
  std::vector<CallRow> out;
  if (!rows.ok()) return out;
  for (int i = 0; i < rows->rows(); ++i) {
    out.push_back({rows->Get(i, "job_id"), rows->Get(i, "provider"), rows->Get(i, "model"),
                   rows->Get(i, "status"), rows->Get(i, "error"), rows->GetInt(i, "tokens_in"),
                   rows->GetInt(i, "tokens_out"), rows->GetDouble(i, "cost")});
  }
  return out;
}

std::vector<std::string> Statuses(PgPool& pool) {
  std::vector<std::string> out;
  for (const CallRow& r : Rows(pool)) out.push_back(r.status);
  return out;
}

// Everything written to fd 2 while it lives (the JSON-lines log goes there).
class CapturedStderr {
 public:
  CapturedStderr() {
    saved_ = dup(2);
    int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
  }
  ~CapturedStderr() { Restore(); }
  std::string Text() {
    Restore();
    std::ifstream in(path_);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  void Restore() {
    if (saved_ < 0) return;
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
  }
  TempDir dir_;
  std::string path_ = dir_.path() + "/stderr";
  int saved_ = -1;
};

// One generator wired to the fake provider and a fresh database.
class GatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = FakeLlmServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string db;
    for (char c : name) db += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    url_ = MigratedDatabase("gw_" + db);
    pool_ = std::make_unique<PgPool>(url_, 4);
    log_ = std::make_unique<PgCallLog>(*pool_);
    PriceTable prices = {{"priced-model", {2.0, 8.0}}};
    accounting_ = std::make_unique<CallAccounting>(log_.get(), prices, registry_);
    Build(ConfigFor("openai", Protocol::kOpenAi), ConfigFor("anthropic", Protocol::kAnthropic));
  }

  ProviderConfig ConfigFor(const std::string& name, Protocol protocol) {
    ProviderConfig c;
    c.name = name;
    c.protocol = protocol;
    c.base_url = server_->base_url();
    c.api_key = kKey;
    c.timeout_s = 5;
    c.connect_timeout_s = 2;
    c.retry.max_attempts = 3;
    c.retry.initial_backoff_s = 0.01;
    c.retry.max_backoff_s = 0.05;
    c.max_concurrency = 8;
    return c;
  }

  void Build(ProviderConfig openai, ProviderConfig anthropic) {
    generator_.reset();
    openai_ = std::make_unique<ProviderClient>(std::move(openai), transport_);
    anthropic_ = std::make_unique<ProviderClient>(std::move(anthropic), transport_);
    GeneratorDefaults defaults;
    defaults.model = "test-model";
    generator_ =
        std::make_unique<Generator>(defaults, templates_,
                                    std::map<std::string, ProviderClient*>{
                                        {"openai", openai_.get()}, {"anthropic", anthropic_.get()}},
                                    *accounting_);
  }

  v1::GenerateRequest Request(const std::string& provider, uint32_t n) {
    v1::GenerateRequest req;
    req.set_task_source(Task());
    req.set_strategy("contrastive");
    req.set_num_candidates(n);
    req.mutable_llm()->set_provider(provider);
    v1::Exemplar* e = req.add_exemplars();
    e->set_source(Candidate(1));
    e->set_speedup(1.1);
    e->set_gpu_type("H200");
    e->set_verdict(v1::VERDICT_OK);
    return req;
  }

  FakeReply Code(int variant) {
    FakeReply r;
    r.completion =
        CompletionWithCode("Analysis: launch bound.\nDesign: bigger blocks.", Candidate(variant));
    r.tokens_in = 1000;
    r.tokens_out = 200;
    return r;
  }

  static FakeReply Status(int status, std::string body = "busy") {
    FakeReply r;
    r.status = status;
    r.body = std::move(body);
    return r;
  }

  std::unique_ptr<FakeLlmServer> server_;
  std::string url_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgCallLog> log_;
  prometheus::Registry registry_;
  std::unique_ptr<CallAccounting> accounting_;
  CurlTransport transport_;
  TemplateSet templates_ = *TemplateSet::Load("");
  std::unique_ptr<ProviderClient> openai_, anthropic_;
  std::unique_ptr<Generator> generator_;
};

TEST_F(GatewayTest, OpenAiCompatibleSuccess) {
  server_->Enqueue(Code(2));
  server_->Enqueue(Code(3));
  v1::GenerateRequest req = Request("openai", 2);
  req.set_seed(40);
  auto resp = generator_->Generate(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->candidates_size(), 2);
  std::set<std::string> sources;
  for (const v1::GeneratedCandidate& c : resp->candidates()) {
    EXPECT_EQ(c.parse_error(), "");
    EXPECT_EQ(c.status(), "ok");
    EXPECT_EQ(c.dialect(), v1::DIALECT_NVRTC);
    EXPECT_EQ(c.analysis(), "Analysis: launch bound.\nDesign: bigger blocks.");
    EXPECT_THAT(c.prompt(), HasSubstr("speedup 1.100x on H200"));
    EXPECT_THAT(c.completion(), HasSubstr("```python"));
    EXPECT_FALSE(c.llm_call_id().empty());
    sources.insert(c.source());
  }
  EXPECT_EQ(sources, (std::set<std::string>{Candidate(2), Candidate(3)}));
  EXPECT_EQ(resp->tokens_in(), 2000u);
  EXPECT_EQ(resp->tokens_out(), 400u);

  std::vector<RecordedRequest> requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u);
  std::set<int> seeds;
  for (const RecordedRequest& r : requests) {
    EXPECT_EQ(r.path, "/v1/chat/completions");
    EXPECT_EQ(r.headers.at("authorization"), std::string("Bearer ") + kKey);
    nlohmann::json body = nlohmann::json::parse(r.body);
    EXPECT_EQ(body["model"], "test-model");
    EXPECT_THAT(body["messages"][1]["content"].get<std::string>(), HasSubstr("kforge.cuda"));
    seeds.insert(body["seed"].get<int>());
  }
  EXPECT_EQ(seeds, (std::set<int>{40, 41}));

  std::vector<CallRow> rows = Rows(*pool_);
  ASSERT_EQ(rows.size(), 2u);
  for (const CallRow& r : rows) {
    EXPECT_EQ(r.provider, "openai");
    EXPECT_EQ(r.model, "test-model");
    EXPECT_EQ(r.status, "ok");
    EXPECT_EQ(r.tokens_in, 1000);
    EXPECT_EQ(r.tokens_out, 200);
    EXPECT_EQ(r.job_id, "");
    EXPECT_EQ(r.cost_usd, 0);  // not in the price table
  }
}

TEST_F(GatewayTest, AnthropicSuccessIsPricedAndTiedToItsJob) {
  auto job = pool_->Exec(
      "WITH t AS (INSERT INTO tasks (task_id, name, source) VALUES ('t1', 'relu', 'x') "
      "RETURNING task_id) INSERT INTO jobs (task_id, gpu_types, strategy) "
      "SELECT task_id, '{H200}', 'contrastive' FROM t RETURNING job_id");
  ASSERT_TRUE(job.ok()) << job.status();
  const std::string job_id = job->Get(0, "job_id");
  server_->Enqueue(Code(2));
  v1::GenerateRequest req = Request("anthropic", 1);
  req.set_job_id(job_id);
  req.mutable_llm()->set_model("priced-model");
  auto resp = generator_->Generate(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->candidates_size(), 1);
  EXPECT_EQ(resp->candidates(0).source(), Candidate(2));
  const RecordedRequest r = server_->requests().at(0);
  EXPECT_EQ(r.path, "/v1/messages");
  EXPECT_EQ(r.headers.at("x-api-key"), kKey);
  EXPECT_EQ(r.headers.at("anthropic-version"), "2023-06-01");
  EXPECT_EQ(r.headers.count("authorization"), 0u);
  std::vector<CallRow> rows = Rows(*pool_);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].job_id, job_id);
  EXPECT_EQ(rows[0].provider, "anthropic");
  EXPECT_DOUBLE_EQ(rows[0].cost_usd, (1000 * 2.0 + 200 * 8.0) / 1e6);
  EXPECT_EQ(resp->candidates(0).llm_call_id(),
            pool_->Exec("SELECT max(call_id) AS id FROM llm_calls")->Get(0, "id"));

  req.set_job_id("6c1f0f8e-0000-4000-8000-000000000000");
  auto unknown = generator_->Generate(req);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("not found"));
  EXPECT_EQ(server_->requests().size(), 1u) << "no provider call for an unknown job";
}

TEST_F(GatewayTest, Http429ThenSuccessIsRetried) {
  FakeReply limited = Status(429, R"({"error":"rate limited"})");
  limited.headers = {{"Retry-After", "0"}};
  server_->Enqueue(limited);
  server_->Enqueue(Code(2));
  auto resp = generator_->Generate(Request("openai", 1));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->candidates(0).source(), Candidate(2));
  EXPECT_EQ(resp->candidates(0).status(), "ok");
  EXPECT_EQ(server_->requests().size(), 2u);
  std::vector<CallRow> rows = Rows(*pool_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].status, "http_429");
  EXPECT_THAT(rows[0].error, HasSubstr("HTTP 429"));
  EXPECT_EQ(rows[0].tokens_in, 0);
  EXPECT_EQ(rows[1].status, "ok");
  EXPECT_EQ(resp->tokens_in(), 1000u);
}

TEST_F(GatewayTest, ServerErrorsUntilRetriesAreExhausted) {
  server_->SetDefault(Status(503, "overloaded"));
  auto resp = generator_->Generate(Request("openai", 1));
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(resp.status().message(),
              AllOf(HasSubstr("http_5xx"), HasSubstr("HTTP 503: overloaded"),
                    HasSubstr("after 3 attempts")));
  EXPECT_EQ(server_->requests().size(), 3u);
  EXPECT_THAT(Statuses(*pool_), ElementsAre("http_5xx", "http_5xx", "http_5xx"));
}

TEST_F(GatewayTest, ACancelledRequestStopsRetrying) {
  server_->SetDefault(Status(503, "overloaded"));
  auto resp = generator_->Generate(Request("openai", 1), [] { return true; });
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(resp.status().message(), HasSubstr("no retry: the request was cancelled"));
  EXPECT_EQ(server_->requests().size(), 1u);
  EXPECT_THAT(Statuses(*pool_), ElementsAre("http_5xx"));
}

TEST_F(GatewayTest, SlowReplyTimesOut) {
  ProviderConfig openai = ConfigFor("openai", Protocol::kOpenAi);
  openai.timeout_s = 0.3;
  openai.retry.max_attempts = 2;
  Build(openai, ConfigFor("anthropic", Protocol::kAnthropic));
  FakeReply slow = Code(2);
  slow.delay_s = 3;
  server_->SetDefault(slow);
  auto resp = generator_->Generate(Request("openai", 1));
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(resp.status().message(), HasSubstr("timeout: request timed out"));
  std::vector<CallRow> rows = Rows(*pool_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].status, "timeout");
  EXPECT_EQ(rows[1].status, "timeout");
}

TEST_F(GatewayTest, MalformedJsonIsABadResponseNotRetried) {
  server_->SetDefault(Status(200, "{\"choices\": [ this is not json"));
  auto resp = generator_->Generate(Request("openai", 1));
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(resp.status().message(), HasSubstr("bad_response: reply is not a JSON object"));
  EXPECT_EQ(server_->requests().size(), 1u);
  EXPECT_THAT(Statuses(*pool_), ElementsAre("bad_response"));
}

TEST_F(GatewayTest, UnusableCompletionsAreParseErrorsStoredWithTheCall) {
  FakeReply none = Code(1);
  none.completion = "I would fuse the kernels, but here is no code.";
  FakeReply two = Code(1);
  two.completion = CompletionWithCode("A", Candidate(2)) + CompletionWithCode("B", Candidate(3));
  FakeReply wrong = Code(1);
  wrong.completion = "```python\nimport torch\nclass ModelNew:\n    pass\n```";
  // One call at a time, so the replies land in order.
  ProviderConfig openai = ConfigFor("openai", Protocol::kOpenAi);
  openai.max_concurrency = 1;
  Build(openai, ConfigFor("anthropic", Protocol::kAnthropic));
  server_->Enqueue(none);
  server_->Enqueue(two);
  server_->Enqueue(wrong);
  auto resp = generator_->Generate(Request("openai", 3));
  ASSERT_TRUE(resp.ok()) << resp.status();
  std::multiset<std::string> errors;
  for (const v1::GeneratedCandidate& c : resp->candidates()) {
    EXPECT_EQ(c.source(), "");
    EXPECT_EQ(c.status(), "parse_error");
    EXPECT_FALSE(c.completion().empty());
    errors.insert(c.parse_error());
  }
  EXPECT_EQ(errors, (std::multiset<std::string>{
                        "no ```python code block in the reply",
                        "the reply has 2 python code blocks; exactly one complete candidate "
                        "is expected",
                        "wrong dialect: a nvrtc candidate was asked for, but the code is plain "
                        "PyTorch without kforge.cuda kernels"}));
  std::multiset<std::string> stored;
  for (const CallRow& r : Rows(*pool_)) {
    EXPECT_EQ(r.status, "parse_error");
    EXPECT_EQ(r.tokens_out, 200) << "tokens of an unusable reply still count";
    stored.insert(r.error);
  }
  EXPECT_EQ(stored, errors);
}

TEST_F(GatewayTest, ConcurrencyCapHoldsAcrossCandidates) {
  ProviderConfig openai = ConfigFor("openai", Protocol::kOpenAi);
  openai.max_concurrency = 2;
  Build(openai, ConfigFor("anthropic", Protocol::kAnthropic));
  FakeReply slowish = Code(2);
  slowish.delay_s = 0.2;
  server_->SetDefault(slowish);
  auto resp = generator_->Generate(Request("openai", 6));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->candidates_size(), 6);
  EXPECT_EQ(server_->requests().size(), 6u);
  EXPECT_EQ(server_->max_in_flight(), 2);
}

TEST_F(GatewayTest, ApiKeyNeverReachesRowsOrLogs) {
  FakeReply echo = Status(401, "invalid key:");
  echo.echo_headers = true;  // the reply quotes the Authorization header back
  server_->SetDefault(echo);
  std::string log;
  {
    CapturedStderr capture;
    auto resp = generator_->Generate(Request("openai", 1));
    EXPECT_EQ(resp.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(resp.status().message()),
                AllOf(HasSubstr("HTTP 401"), HasSubstr("[redacted]"), Not(HasSubstr(kKey))));
    pool_.reset();  // the accounting's insert fails now, and logs its error
    log_ = std::make_unique<PgCallLog>(
        *(pool_ = std::make_unique<PgPool>("postgresql://nobody@127.0.0.1:1/none", 1)));
    accounting_ = std::make_unique<CallAccounting>(log_.get(), PriceTable{}, registry_);
    Build(ConfigFor("openai", Protocol::kOpenAi), ConfigFor("anthropic", Protocol::kAnthropic));
    (void)generator_->Generate(Request("openai", 1));
    log = capture.Text();
  }
  EXPECT_THAT(log, HasSubstr("cannot store llm_calls rows"));
  EXPECT_THAT(log, Not(HasSubstr(kKey)));
  PgPool pool(url_, 1);
  std::vector<CallRow> rows = Rows(pool);
  ASSERT_FALSE(rows.empty());
  for (const CallRow& r : rows) {
    EXPECT_EQ(r.status, "http_4xx");
    EXPECT_THAT(r.error, AllOf(HasSubstr("[redacted]"), Not(HasSubstr(kKey))));
  }
}

TEST_F(GatewayTest, RequestBaseUrlGetsNoKey) {
  server_->Enqueue(Code(2));
  v1::GenerateRequest req = Request("openai", 1);
  req.mutable_llm()->set_base_url(server_->base_url() + "/v1");
  auto resp = generator_->Generate(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(server_->requests().at(0).headers.count("authorization"), 0u);
}

TEST_F(GatewayTest, ABaseUrlOutsideTheAllowListIsRefusedBeforeAnythingIsSent) {
  auto other = FakeLlmServer::Start();
  ASSERT_TRUE(other.ok()) << other.status();
  for (const char* provider : {"openai", "anthropic", "offline"}) {
    v1::GenerateRequest req = Request(provider, 1);
    req.mutable_llm()->set_base_url((*other)->base_url());
    auto resp = generator_->Generate(req);
    EXPECT_EQ(resp.status().code(), absl::StatusCode::kPermissionDenied) << provider;
    EXPECT_THAT(std::string(resp.status().message()),
                AllOf(HasSubstr("llm.base_url \"" + (*other)->base_url() +
                                "\" is not an allowed LLM endpoint"),
                      HasSubstr(server_->base_url())))
        << provider;
    v1::ProposeIdeasRequest ideas;
    ideas.set_task_source(Task());
    *ideas.mutable_llm() = req.llm();
    EXPECT_EQ(generator_->ProposeIdeas(ideas).status().code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(generator_->CheckSettings(req.llm()).code(), absl::StatusCode::kPermissionDenied);
  }
  EXPECT_TRUE((*other)->requests().empty());
  EXPECT_TRUE(server_->requests().empty());
  EXPECT_TRUE(Rows(*pool_).empty());
}

TEST_F(GatewayTest, ProposeIdeasThroughTheProvider) {
  FakeReply ideas;
  ideas.completion = "Thoughts.\nIDEA: fuse the two kernels\nIDEA: use float4 loads\nIDEA: x";
  server_->Enqueue(ideas);
  v1::ProposeIdeasRequest req;
  req.set_task_source(Task());
  req.set_num_ideas(2);
  req.mutable_llm()->set_provider("openai");
  v1::IdeaOutcome* o = req.add_earlier_ideas();
  o->set_idea("unroll by 4");
  o->set_best_speedup(1.3);
  auto resp = generator_->ProposeIdeas(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_THAT(resp->ideas(), ElementsAre("fuse the two kernels", "use float4 loads"));
  EXPECT_EQ(resp->parse_error(), "");
  EXPECT_THAT(resp->prompt(), HasSubstr("unroll by 4 -> best speedup 1.300x"));
  EXPECT_EQ(resp->tokens_in(), 100u);
  EXPECT_FALSE(resp->llm_call_id().empty());
  EXPECT_THAT(Statuses(*pool_), ElementsAre("ok"));
}

TEST_F(GatewayTest, OfflineProposerIsTheDefaultAndIsAccounted) {
  v1::GenerateRequest req;
  req.set_task_source(Task());
  req.set_num_candidates(4);
  req.set_seed(11);
  v1::Exemplar* e = req.add_exemplars();
  e->set_source(ReadSourceFile("examples/candidates/19_ReLU/nvrtc_vec4.py"));
  e->set_speedup(1.01);
  e->set_gpu_type("H200");
  auto resp = generator_->Generate(req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->candidates_size(), 4);
  std::set<std::string> sources;
  for (const v1::GeneratedCandidate& c : resp->candidates()) {
    EXPECT_EQ(c.parse_error(), "");
    EXPECT_EQ(c.dialect(), v1::DIALECT_NVRTC);
    EXPECT_NE(c.source(), e->source());
    EXPECT_THAT(c.analysis(), HasSubstr("Offline proposer"));
    sources.insert(c.source());
  }
  EXPECT_EQ(sources.size(), 4u);
  EXPECT_TRUE(server_->requests().empty());
  for (const CallRow& r : Rows(*pool_)) {
    EXPECT_EQ(r.provider, "offline");
    EXPECT_EQ(r.status, "ok");
    EXPECT_EQ(r.tokens_in + r.tokens_out, 0);
  }
  EXPECT_EQ(Rows(*pool_).size(), 4u);

  auto again = generator_->Generate(req);
  ASSERT_TRUE(again.ok());
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(again->candidates(i).source(), resp->candidates(i).source());

  req.mutable_exemplars(0)->set_source(Candidate(1));  // no knobs
  auto none = generator_->Generate(req);
  ASSERT_TRUE(none.ok());
  ASSERT_EQ(none->candidates_size(), 1);
  EXPECT_THAT(none->candidates(0).parse_error(), HasSubstr("declares tunable parameters"));
  EXPECT_EQ(Statuses(*pool_).back(), "parse_error");
}

TEST_F(GatewayTest, BadRequestsAreRejectedBeforeAnyCall) {
  v1::GenerateRequest req = Request("openai", 1);
  req.set_strategy("genetic");
  EXPECT_EQ(generator_->Generate(req).status().code(), absl::StatusCode::kInvalidArgument);
  req = Request("gemini", 1);
  EXPECT_THAT(generator_->Generate(req).status().message(), HasSubstr("unknown LLM provider"));
  req = Request("openai", 1000);
  EXPECT_THAT(generator_->Generate(req).status().message(), HasSubstr("above the limit"));
  req = Request("openai", 1);
  req.clear_task_source();
  EXPECT_EQ(generator_->Generate(req).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(server_->requests().empty());
}

// ---- the real binary ----

// The token the test's gateways accept from their callers (the coordinators' in a deployment).
const std::string& CallerToken() {
  static auto* token = new std::string(NewToken().value());
  return *token;
}

std::string CallerTokenFlag() {
  static TempDir* dir = new TempDir();
  const std::string path = dir->path() + "/caller.token";
  std::ofstream(path) << CallerToken() << "\n";
  return "--caller_token_file=" + path;
}

std::unique_ptr<ServiceProcess> StartGateway(std::vector<std::string> flags) {
  flags.push_back(CallerTokenFlag());
  auto gateway = ServiceProcess::Start(BuiltBinary("llm_gateway/kforge-gateway"), std::move(flags));
  EXPECT_TRUE(gateway.ok()) << gateway.status();
  return gateway.ok() ? std::move(gateway).value() : nullptr;
}

// GatewayService calling with `token` (the callers' by default).
std::unique_ptr<v1::GatewayService::Stub> Stub(const ServiceProcess& gateway,
                                               const std::string& token = CallerToken()) {
  return v1::GatewayService::NewStub(
      MakeChannel(gateway.grpc_address(), {token, TestPki::Shared().Client()}));
}

TEST(GatewayBinary, AnswersOfflineGenerateAndProposeIdeasOverGrpc) {
  const std::string url = MigratedDatabase("gw_binary_offline");
  auto gateway = StartGateway({"--database_url=" + url});
  ASSERT_NE(gateway, nullptr);
  auto stub = Stub(*gateway);

  v1::GenerateRequest req;
  req.set_task_source(Task());
  req.set_num_candidates(3);
  req.set_seed(5);
  v1::Exemplar* e = req.add_exemplars();
  e->set_source(ReadSourceFile("examples/candidates/19_ReLU/nvrtc_vec4.py"));
  e->set_speedup(1.01);
  e->set_gpu_type("H200");
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::GenerateResponse resp;
  grpc::Status s = stub->Generate(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << gateway->log();
  ASSERT_EQ(resp.candidates_size(), 3);
  for (const v1::GeneratedCandidate& c : resp.candidates()) {
    EXPECT_EQ(c.parse_error(), "");
    EXPECT_FALSE(c.llm_call_id().empty());
  }

  v1::ProposeIdeasRequest ideas_req;
  ideas_req.set_task_source(Task());
  *ideas_req.add_exemplars() = *e;
  grpc::ClientContext ctx2;
  v1::ProposeIdeasResponse ideas;
  s = stub->ProposeIdeas(&ctx2, ideas_req, &ideas);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(ideas.ideas_size(), 3);  // BLOCK, UNROLL, MAX_GRID

  grpc::ClientContext ctx3;
  v1::GenerateRequest empty;
  s = stub->Generate(&ctx3, empty, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  PgPool pool(url, 1);
  auto count = pool.Exec("SELECT count(*) AS n FROM llm_calls WHERE provider = 'offline'");
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(count->GetInt(0, "n"), 4);
  auto metrics = HttpGet(gateway->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(
      metrics->body,
      AllOf(HasSubstr("kforge_gateway_llm_calls_total{provider=\"offline\",status=\"ok\"} 4"),
            HasSubstr("kforge_gateway_llm_call_seconds_count{provider=\"offline\"} 4"),
            HasSubstr("kforge_gateway_llm_tokens_total{direction=\"in\",provider=\"offline\"} 0")));
  SubprocessResult exit = gateway->Terminate(15);
  EXPECT_EQ(exit.exit_code, 0) << exit.Describe();
}

TEST(GatewayBinary, RefusesCallersWithoutTheCoordinatorsToken) {
  auto gateway = StartGateway({});
  ASSERT_NE(gateway, nullptr);
  v1::GenerateRequest req;
  req.set_task_source(Task());
  for (const std::string& token : {std::string(), NewToken().value()}) {
    grpc::ClientContext ctx;
    v1::GenerateResponse resp;
    grpc::Status s = Stub(*gateway, token)->Generate(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(s.error_message(), token.empty()
                                     ? "the gateway serves coordinators only: no token sent (the "
                                       "coordinator's --gateway_token_file)"
                                     : "the gateway serves coordinators only: wrong token");
  }
  auto open = ServiceProcess::Start(BuiltBinary("llm_gateway/kforge-gateway"), {});
  EXPECT_FALSE(open.ok());
  EXPECT_THAT(std::string(open.status().message()), HasSubstr("--caller_token_file is required"));
}

TEST(GatewayBinary, RunsWithoutADatabaseAndThenRecordsNothing) {
  auto gateway = StartGateway({});
  ASSERT_NE(gateway, nullptr);
  v1::GenerateRequest req;
  req.set_task_source(Task());
  *req.add_exemplars()->mutable_source() =
      ReadSourceFile("examples/candidates/tiny_add_scale/nvrtc_add_scale.py");
  grpc::ClientContext ctx;
  v1::GenerateResponse resp;
  grpc::Status s = Stub(*gateway)->Generate(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << gateway->log();
  ASSERT_EQ(resp.candidates_size(), 1);
  EXPECT_EQ(resp.candidates(0).parse_error(), "");
  EXPECT_EQ(resp.candidates(0).llm_call_id(), "");
  EXPECT_THAT(gateway->log(), HasSubstr("no --database_url"));
  EXPECT_EQ(gateway->Terminate(15).exit_code, 0);
}

TEST(GatewayBinary, CallsAConfiguredProviderWithTheKeyFromTheEnvironment) {
  const std::string url = MigratedDatabase("gw_binary_openai");
  auto server = FakeLlmServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  FakeReply good;
  good.completion = CompletionWithCode("Use bigger blocks.", Candidate(4));
  (*server)->Enqueue(good);
  FakeReply echo;
  echo.status = 401;
  echo.body = "bad key";
  echo.echo_headers = true;
  (*server)->SetDefault(echo);
  setenv("OPENAI_API_KEY", kKey, 1);
  auto gateway =
      StartGateway({"--database_url=" + url, "--llm_provider=openai", "--llm_model=served-model",
                    "--log_level=debug", "--openai_base_url=" + (*server)->base_url()});
  unsetenv("OPENAI_API_KEY");
  ASSERT_NE(gateway, nullptr);
  auto stub = Stub(*gateway);
  v1::GenerateRequest req;
  req.set_task_source(Task());
  grpc::ClientContext ctx;
  v1::GenerateResponse resp;
  grpc::Status s = stub->Generate(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << gateway->log();
  ASSERT_EQ(resp.candidates_size(), 1);
  EXPECT_EQ(resp.candidates(0).source(), Candidate(4));
  EXPECT_EQ((*server)->requests().at(0).headers.at("authorization"), std::string("Bearer ") + kKey);

  grpc::ClientContext ctx2;
  s = stub->Generate(&ctx2, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), AllOf(HasSubstr("HTTP 401"), Not(HasSubstr(kKey))));
  SubprocessResult exit = gateway->Terminate(15);
  EXPECT_EQ(exit.exit_code, 0) << exit.Describe();
  EXPECT_THAT(gateway->log(), AllOf(HasSubstr("\"openai_key\":\"set\""), Not(HasSubstr(kKey))));
  PgPool pool(url, 1);
  auto rows = pool.Exec(
      "SELECT string_agg(coalesce(error, ''), ' ') AS e, count(*) AS n "
      "FROM llm_calls");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->GetInt(0, "n"), 2);
  EXPECT_THAT(rows->Get(0, "e"), Not(HasSubstr(kKey)));
}

}  // namespace
}  // namespace kforge::gateway
