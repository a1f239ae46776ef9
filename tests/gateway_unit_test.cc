// The gateway's pure parts: completion parsing, templates and prompts, the offline proposer,
// the provider protocols, and the arithmetic of rate limits and backoff.
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "llm_gateway/completion_parser.h"
#include "llm_gateway/limits.h"
#include "llm_gateway/offline_proposer.h"
#include "llm_gateway/prompt_builder.h"
#include "llm_gateway/provider_protocol.h"
#include "llm_gateway/templates.h"
#include "nlohmann/json.hpp"
#include "tests/service_process.h"
#include "tests/source_file.h"

namespace kforge::gateway {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNvrtcCandidate[] = R"(# kforge: dialect=nvrtc
import torch
import torch.nn as nn
from kforge import cuda

_mod = cuda.compile(r'''extern "C" __global__ void k(float* y) {}''')


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _mod.k(grid=(1,), block=(1,), args=(y,))
        return y
)";

// ---- completion parsing ----

TEST(ParseCompletion, TakesAnalysisAndTheOneCodeBlock) {
  std::string text = std::string("Analysis: memory bound.\nDesign: float4.\n\n```python\n") +
                     kNvrtcCandidate + "```\nThat is all.";
  ParsedCompletion p = ParseCompletion(text, v1::DIALECT_NVRTC);
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.source, kNvrtcCandidate);
  EXPECT_EQ(p.analysis, "Analysis: memory bound.\nDesign: float4.\n\nThat is all.");
}

TEST(ParseCompletion, NoCodeBlockIsAParseError) {
  ParsedCompletion p = ParseCompletion("I would use shared memory.", v1::DIALECT_NVRTC);
  EXPECT_EQ(p.source, "");
  EXPECT_EQ(p.error, "no ```python code block in the reply");
  EXPECT_EQ(p.analysis, "I would use shared memory.");
}

TEST(ParseCompletion, OnlyABlockOfAnotherLanguageSaysSo) {
  ParsedCompletion p = ParseCompletion("```cuda\n__global__ void k() {}\n```", v1::DIALECT_NVRTC);
  EXPECT_THAT(p.error, AllOf(HasSubstr("no ```python code block"), HasSubstr("cuda"),
                             HasSubstr("one complete python file")));
}

TEST(ParseCompletion, TwoCandidatesAreAParseError) {
  std::string one = std::string("```python\n") + kNvrtcCandidate + "```\n";
  ParsedCompletion p = ParseCompletion("Two options.\n" + one + "Or:\n" + one, v1::DIALECT_NVRTC);
  EXPECT_EQ(p.source, "");
  EXPECT_EQ(p.error,
            "the reply has 2 python code blocks; exactly one complete candidate is expected");
}

TEST(ParseCompletion, WrongDialectIsAParseError) {
  std::string load_inline =
      "```python\nfrom torch.utils.cpp_extension import load_inline\nclass ModelNew: pass\n```";
  EXPECT_EQ(ParseCompletion(load_inline, v1::DIALECT_NVRTC).error,
            "wrong dialect: a nvrtc candidate was asked for, but the code is kernelbench "
            "(kernels through load_inline)");
  std::string plain = "```python\nimport torch\nclass ModelNew:\n    pass\n```";
  EXPECT_THAT(ParseCompletion(plain, v1::DIALECT_NVRTC).error,
              HasSubstr("plain PyTorch without kforge.cuda kernels"));
  EXPECT_THAT(
      ParseCompletion(std::string("```python\n") + kNvrtcCandidate + "```", v1::DIALECT_CPP).error,
      HasSubstr("no ```cpp code block"));
}

TEST(ParseCompletion, MissingModelNewAndTruncatedReplies) {
  EXPECT_EQ(ParseCompletion("```python\nfrom kforge import cuda\n```", v1::DIALECT_NVRTC).error,
            "the code defines no class ModelNew");
  EXPECT_EQ(
      ParseCompletion("```python\nfrom kforge import cuda\n", v1::DIALECT_NVRTC, "length").error,
      "the reply's last code block is not closed with ``` (the reply was cut off at the "
      "token limit)");
}

TEST(ParseCompletion, CppCandidate) {
  std::string cpp = ReadSourceFile("examples/candidates/tiny_relu/cpp_relu.cpp");
  ASSERT_FALSE(cpp.empty());
  ParsedCompletion p = ParseCompletion("Design.\n```cpp\n" + cpp + "```", v1::DIALECT_CPP);
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.source, cpp);
}

TEST(ParseIdeas, ReadsIdeaLinesThenListItems) {
  EXPECT_THAT(ParseIdeas("Some text\nIDEA: fuse A and B\n- **Idea 2:** tile by 32\nidea: fuse A "
                         "and B\n1. not this",
                         10),
              ElementsAre("fuse A and B", "tile by 32"));
  EXPECT_THAT(ParseIdeas("1. use float4\n2) use shared memory\n- unroll", 2),
              ElementsAre("use float4", "use shared memory"));
  EXPECT_TRUE(ParseIdeas("nothing here", 3).empty());
}

// ---- templates and prompts ----

TEST(Templates, EmbeddedSetHasEveryStrategyAndDialect) {
  for (const char* name : {"system.md", "contrastive.md", "idea_branching.md", "ideas.md",
                           "dialect_nvrtc.md", "dialect_kernelbench.md", "dialect_cpp.md"}) {
    EXPECT_EQ(EmbeddedTemplates().count(name), 1u) << name;
  }
}

TEST(Templates, UnknownPlaceholderIsNamed) {
  TemplateSet set(std::map<std::string, std::string>{{"t.md", "a {{x}} b {{y}}"}});
  EXPECT_EQ(*set.Render("t.md", {{"x", "1"}, {"y", "2"}}), "a 1 b 2");
  absl::StatusOr<std::string> bad = set.Render("t.md", {{"x", "1"}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "template t.md uses unknown placeholder {{y}}");
  EXPECT_EQ(set.Render("none.md", {}).status().code(), absl::StatusCode::kNotFound);
}

TEST(Templates, DirectoryOverridesOneFileAndKeepsTheOthers) {
  TempDir dir;
  std::ofstream(dir.path() + "/system.md") << "custom system";
  auto set = TemplateSet::Load(dir.path());
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(*set->Render("system.md", {}), "custom system");
  EXPECT_TRUE(set->Has("contrastive.md"));
  EXPECT_EQ(TemplateSet::Load(dir.path() + "/missing").status().code(),
            absl::StatusCode::kNotFound);
}

v1::Exemplar MakeExemplar(const std::string& id, const std::string& source, double speedup,
                          const std::string& gpu) {
  v1::Exemplar e;
  e.set_candidate_id(id);
  e.set_source(source);
  e.set_speedup(speedup);
  e.set_gpu_type(gpu);
  e.set_verdict(speedup > 0 ? v1::VERDICT_OK : v1::VERDICT_INCORRECT);
  return e;
}

TEST(Prompts, ContrastiveShowsVariantsBestFirstWithGpuAndTeachesKforgeCuda) {
  auto templates = TemplateSet::Load("");
  ASSERT_TRUE(templates.ok());
  v1::GenerateRequest req;
  req.set_task_source("class Model: pass  # TASK");
  *req.add_exemplars() = MakeExemplar("slow", "# SLOW VARIANT", 1.2, "A100");
  *req.add_exemplars() = MakeExemplar("broken", "# BROKEN VARIANT", 0, "H200");
  *req.add_exemplars() = MakeExemplar("fast", "# FAST VARIANT", 3.5, "H200");
  auto prompt = BuildGeneratePrompt(*templates, req, "contrastive", v1::DIALECT_NVRTC);
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  const std::string& p = prompt->user;
  EXPECT_THAT(p, HasSubstr("class Model: pass  # TASK"));
  EXPECT_THAT(p, HasSubstr("speedup 3.500x on H200"));
  EXPECT_THAT(p, HasSubstr("speedup 1.200x on A100"));
  EXPECT_THAT(p, HasSubstr("failed (incorrect) on H200"));
  EXPECT_LT(p.find("# FAST VARIANT"), p.find("# SLOW VARIANT"));
  EXPECT_LT(p.find("# SLOW VARIANT"), p.find("# BROKEN VARIANT"));
  EXPECT_THAT(p, HasSubstr("Performance analysis"));
  EXPECT_THAT(p, HasSubstr("Algorithm design"));
  EXPECT_LT(p.find("Performance analysis"), p.find("Algorithm design"));
  EXPECT_THAT(p, HasSubstr("exactly one ```python code block"));
  // The kforge.cuda API as the engine implements it.
  EXPECT_THAT(p, HasSubstr("from kforge import cuda"));
  EXPECT_THAT(p, HasSubstr("cuda.compile(SRC"));
  EXPECT_THAT(p, HasSubstr("extern \"C\" __global__"));
  EXPECT_THAT(p, HasSubstr("grid=(gx, gy, gz), block=(bx, by, bz), shared_mem=0, args=(x, y, n)"));
  EXPECT_THAT(p, HasSubstr("# kforge: dialect=nvrtc"));
  EXPECT_THAT(p, Not(HasSubstr("{{")));
  EXPECT_FALSE(prompt->system.empty());
}

TEST(Prompts, IdeaBranchingCarriesTheIdeaAndCppTheCandidateHeader) {
  auto templates = TemplateSet::Load("");
  ASSERT_TRUE(templates.ok());
  v1::GenerateRequest req;
  req.set_task_source("TASK");
  req.set_idea("fuse the bias into the epilogue");
  auto prompt = BuildGeneratePrompt(*templates, req, "idea_branching", v1::DIALECT_CPP);
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  EXPECT_THAT(prompt->user, HasSubstr("fuse the bias into the epilogue"));
  EXPECT_THAT(prompt->user, HasSubstr("#include <kforge/candidate.h>"));
  EXPECT_THAT(prompt->user, HasSubstr("exactly one\n```cpp code block"));
  EXPECT_THAT(prompt->user, HasSubstr("first round"));
}

TEST(Prompts, IdeasPromptListsEarlierIdeasWithTheirSpeedups) {
  auto templates = TemplateSet::Load("");
  ASSERT_TRUE(templates.ok());
  v1::ProposeIdeasRequest req;
  req.set_task_source("TASK");
  v1::IdeaOutcome* o = req.add_earlier_ideas();
  o->set_idea("use float4");
  o->set_best_speedup(1.25);
  req.add_earlier_ideas()->set_idea("use tensor cores");
  auto prompt = BuildIdeasPrompt(*templates, req, 3);
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  EXPECT_THAT(prompt->user, HasSubstr("- use float4 -> best speedup 1.250x"));
  EXPECT_THAT(prompt->user, HasSubstr("- use tensor cores -> no correct implementation"));
  EXPECT_THAT(prompt->user, HasSubstr("Propose 3 new"));
  EXPECT_THAT(prompt->user, HasSubstr("IDEA:"));
}

// ---- offline proposer ----

TEST(Offline, FindsTheKnobsOfTheExampleCandidates) {
  std::vector<Tunable> knobs =
      FindTunables(ReadSourceFile("examples/candidates/19_ReLU/nvrtc_vec4.py"));
  ASSERT_EQ(knobs.size(), 3u);
  EXPECT_EQ(knobs[0].name, "BLOCK");
  EXPECT_EQ(knobs[0].current, "256");
  EXPECT_THAT(knobs[0].choices, ElementsAre("128", "256", "512", "1024"));
  EXPECT_EQ(knobs[1].name, "UNROLL");
  EXPECT_EQ(knobs[2].name, "MAX_GRID");
  std::vector<Tunable> cpp =
      FindTunables(ReadSourceFile("examples/candidates/tiny_relu/cpp_relu.cpp"));
  ASSERT_EQ(cpp.size(), 1u);
  EXPECT_EQ(cpp[0].current, "256");
}

// Lines that differ between two sources of equal line count.
std::vector<std::string> ChangedLines(const std::string& a, const std::string& b) {
  std::vector<std::string> la = absl::StrSplit(a, '\n'), lb = absl::StrSplit(b, '\n');
  EXPECT_EQ(la.size(), lb.size());
  std::vector<std::string> out;
  for (size_t i = 0; i < std::min(la.size(), lb.size()); ++i) {
    if (la[i] != lb[i]) out.push_back(lb[i]);
  }
  return out;
}

google::protobuf::RepeatedPtrField<v1::Exemplar> ReluExemplars() {
  google::protobuf::RepeatedPtrField<v1::Exemplar> exemplars;
  *exemplars.Add() = MakeExemplar(
      "vec4", ReadSourceFile("examples/candidates/19_ReLU/nvrtc_vec4.py"), 1.01, "H200");
  return exemplars;
}

TEST(Offline, DeterministicDistinctAndNeverAnExemplar) {
  auto exemplars = ReluExemplars();
  OfflineResult a = ProposeOffline(exemplars, v1::DIALECT_NVRTC, "", 7, 12);
  OfflineResult b = ProposeOffline(exemplars, v1::DIALECT_NVRTC, "", 7, 12);
  OfflineResult c = ProposeOffline(exemplars, v1::DIALECT_NVRTC, "", 8, 12);
  ASSERT_EQ(a.error, "");
  ASSERT_EQ(a.proposals.size(), 12u);
  std::set<std::string> sources;
  for (size_t i = 0; i < a.proposals.size(); ++i) {
    EXPECT_EQ(a.proposals[i].source, b.proposals[i].source);
    EXPECT_EQ(a.proposals[i].analysis, b.proposals[i].analysis);
    EXPECT_NE(a.proposals[i].source, exemplars[0].source());
    sources.insert(a.proposals[i].source);
    std::vector<std::string> changed = ChangedLines(exemplars[0].source(), a.proposals[i].source);
    EXPECT_GE(changed.size(), 1u);
    EXPECT_LE(changed.size(), 2u);
    EXPECT_THAT(a.proposals[i].analysis, HasSubstr("speedup 1.010x on H200"));
    EXPECT_THAT(a.proposals[i].analysis, HasSubstr("changed "));
  }
  EXPECT_EQ(sources.size(), 12u);
  bool differs = false;
  for (size_t i = 0; i < c.proposals.size(); ++i) {
    differs = differs || c.proposals[i].source != a.proposals[i].source;
  }
  EXPECT_TRUE(differs) << "another seed should give other proposals";
}

TEST(Offline, RunsOutOfDistinctProposalsInsteadOfRepeating) {
  google::protobuf::RepeatedPtrField<v1::Exemplar> exemplars;
  *exemplars.Add() = MakeExemplar(
      "tiny", ReadSourceFile("examples/candidates/tiny_add_scale/nvrtc_add_scale.py"), 1.0, "H200");
  OfflineResult r = ProposeOffline(exemplars, v1::DIALECT_UNSPECIFIED, "", 1, 10);
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.proposals.size(), 3u);  // BLOCK has 3 other choices, and nothing else to change
}

TEST(Offline, FavoursTheBetterExemplar) {
  std::string vec4 = ReadSourceFile("examples/candidates/19_ReLU/nvrtc_vec4.py");
  google::protobuf::RepeatedPtrField<v1::Exemplar> exemplars;
  *exemplars.Add() = MakeExemplar("worse", "# worse\n" + vec4, 0.5, "H200");
  *exemplars.Add() = MakeExemplar("better", "# better\n" + vec4, 2.0, "H200");
  int from_better = 0, total = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    for (const OfflineProposal& p :
         ProposeOffline(exemplars, v1::DIALECT_NVRTC, "", seed, 1).proposals) {
      ++total;
      from_better += p.source.rfind("# better", 0) == 0;
    }
  }
  EXPECT_EQ(total, 200);
  EXPECT_GT(from_better, 110) << "the better exemplar should be chosen about 2 times in 3";
}

TEST(Offline, AnIdeaChangesItsKnob) {
  auto exemplars = ReluExemplars();
  OfflineResult r =
      ProposeOffline(exemplars, v1::DIALECT_NVRTC, "tune UNROLL (choices: 1,2,4,8)", 3, 5);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.proposals.size(), 5u);
  for (const OfflineProposal& p : r.proposals) {
    std::vector<std::string> changed = ChangedLines(exemplars[0].source(), p.source);
    bool unroll = false;
    for (const std::string& line : changed) unroll = unroll || line.rfind("UNROLL = ", 0) == 0;
    EXPECT_TRUE(unroll) << p.analysis;
    EXPECT_THAT(p.analysis, HasSubstr("Idea: tune UNROLL"));
  }
  EXPECT_THAT(ProposeOffline(exemplars, v1::DIALECT_NVRTC, "use tensor cores", 3, 1).error,
              HasSubstr("names no knob"));
  EXPECT_THAT(ProposeOffline(exemplars, v1::DIALECT_NVRTC, "tune TILE", 3, 1).error,
              HasSubstr("no exemplar has a knob named TILE"));
}

TEST(Offline, NoKnobsOrOtherDialectIsAClearError) {
  google::protobuf::RepeatedPtrField<v1::Exemplar> exemplars;
  *exemplars.Add() = MakeExemplar("plain", kNvrtcCandidate, 1.0, "H200");
  EXPECT_THAT(ProposeOffline(exemplars, v1::DIALECT_NVRTC, "", 1, 2).error,
              HasSubstr("declares tunable parameters"));
  EXPECT_THAT(ProposeOffline(ReluExemplars(), v1::DIALECT_CPP, "", 1, 2).error,
              HasSubstr("no exemplar of dialect cpp declares tunable parameters"));
}

TEST(Offline, IdeasOnePerKnobUntriedFirst) {
  v1::ProposeIdeasRequest req;
  *req.add_exemplars() = ReluExemplars()[0];
  v1::IdeaOutcome* o = req.add_earlier_ideas();
  o->set_idea("tune BLOCK (choices: 128, 256, 512, 1024)");
  o->set_best_speedup(1.1);
  req.set_seed(5);
  std::vector<std::string> ideas = OfflineIdeas(req, 10);
  ASSERT_EQ(ideas.size(), 3u);
  EXPECT_EQ(ideas[2], "tune BLOCK (choices: 128, 256, 512, 1024)");
  EXPECT_THAT(ideas[0], HasSubstr("tune "));
  EXPECT_EQ(OfflineIdeas(req, 10), ideas);
  EXPECT_EQ(OfflineIdeas(req, 1).size(), 1u);
}

// ---- provider protocols ----

TEST(Protocol, OpenAiRequestAndReply) {
  ChatCall call;
  call.model = "m";
  call.system = "sys";
  call.user = "hi";
  call.seed = 9;
  HttpRequest r = EncodeChatRequest(Protocol::kOpenAi, "http://h:1/v1/", "KEY", "", call);
  EXPECT_EQ(r.url, "http://h:1/v1/chat/completions");
  EXPECT_THAT(r.headers, testing::Contains(
                             std::pair<std::string, std::string>("Authorization", "Bearer KEY")));
  nlohmann::json body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "hi");
  EXPECT_EQ(body["seed"], 9);
  auto reply = DecodeChatReply(
      Protocol::kOpenAi,
      R"({"choices":[{"message":{"content":"x"},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":4}})");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->text, "x");
  EXPECT_EQ(reply->finish_reason, "length");
  EXPECT_EQ(reply->tokens_in, 3);
  EXPECT_EQ(reply->tokens_out, 4);
}

TEST(Protocol, AnthropicRequestAndReply) {
  ChatCall call;
  call.model = "claude";
  call.system = "sys";
  call.user = "hi";
  HttpRequest r =
      EncodeChatRequest(Protocol::kAnthropic, "https://a.example", "KEY", "2023-06-01", call);
  EXPECT_EQ(r.url, "https://a.example/v1/messages");
  EXPECT_THAT(r.headers,
              testing::Contains(std::pair<std::string, std::string>("x-api-key", "KEY")));
  EXPECT_THAT(r.headers, testing::Contains(std::pair<std::string, std::string>("anthropic-version",
                                                                               "2023-06-01")));
  nlohmann::json body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["system"], "sys");
  EXPECT_EQ(body["messages"][0]["content"], "hi");
  auto reply = DecodeChatReply(
      Protocol::kAnthropic,
      R"({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"usage":{"input_tokens":5,"output_tokens":6}})");
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->text, "ab");
  EXPECT_EQ(reply->tokens_in, 5);
}

TEST(Protocol, MalformedRepliesAreInvalidArgument) {
  auto not_json = DecodeChatReply(Protocol::kOpenAi, "<html>Bad gateway</html>");
  EXPECT_EQ(not_json.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(not_json.status().message(), HasSubstr("not a JSON object: <html>"));
  EXPECT_THAT(DecodeChatReply(Protocol::kOpenAi, R"({"choices":[]})").status().message(),
              HasSubstr("no choices[0].message"));
  EXPECT_THAT(DecodeChatReply(Protocol::kAnthropic, R"({"type":"error"})").status().message(),
              HasSubstr("no content array"));
}

// ---- limits ----

TEST(Limits, RateLimiterSpacesRequestsEvenly) {
  RateLimiter limiter(120);  // one every 0.5 s
  absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_EQ(limiter.Reserve(t0), t0);
  EXPECT_EQ(limiter.Reserve(t0), t0 + absl::Milliseconds(500));
  EXPECT_EQ(limiter.Reserve(t0 + absl::Milliseconds(100)), t0 + absl::Seconds(1));
  EXPECT_EQ(limiter.Reserve(t0 + absl::Seconds(10)), t0 + absl::Seconds(10));
  RateLimiter unlimited(0);
  EXPECT_EQ(unlimited.Reserve(t0), t0);
  EXPECT_EQ(unlimited.Reserve(t0), t0);
}

TEST(Limits, BackoffDoublesWithJitterAndHonoursRetryAfter) {
  RetryPolicy p;
  p.initial_backoff_s = 1;
  p.max_backoff_s = 10;
  EXPECT_EQ(BackoffDelay(p, 1, 0, std::nullopt), absl::Milliseconds(500));
  EXPECT_EQ(BackoffDelay(p, 1, 0.999999, std::nullopt) < absl::Seconds(1), true);
  EXPECT_EQ(BackoffDelay(p, 3, 0, std::nullopt), absl::Seconds(2));
  EXPECT_EQ(BackoffDelay(p, 10, 0, std::nullopt), absl::Seconds(5));  // capped at 10, halved
  EXPECT_EQ(BackoffDelay(p, 1, 0, absl::Seconds(7)), absl::Seconds(7));
  EXPECT_EQ(BackoffDelay(p, 1, 0, absl::Seconds(700)), absl::Seconds(10));
}

TEST(Limits, RetryAfterSecondsAndDates) {
  absl::Time now = absl::FromUnixSeconds(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT
  EXPECT_EQ(ParseRetryAfter("3", now), absl::Seconds(3));
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:47 GMT", now), absl::Seconds(10));
  EXPECT_EQ(ParseRetryAfter("", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("soon", now), std::nullopt);
}

}  // namespace
}  // namespace kforge::gateway
