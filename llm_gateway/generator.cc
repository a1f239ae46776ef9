#include "llm_gateway/generator.h"

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/dialect.h"
#include "common/status_macros.h"
#include "llm_gateway/completion_parser.h"
#include "llm_gateway/offline_proposer.h"

namespace kforge::gateway {
namespace {

constexpr char kOffline[] = "offline";
constexpr char kOfflineModel[] = "tunable-mutation";

bool ValidStrategy(const std::string& s) {
  return s == "contrastive" || s == "islands" || s == "idea_branching";
}

// The request's error when every provider call failed.
absl::Status AllCallsFailed(const std::string& status, const std::string& error) {
  std::string message = absl::StrCat("every LLM call failed; last: ", status, ": ", error);
  if (status == kStatusHttp4xx || status == kStatusBadResponse) {
    return absl::FailedPreconditionError(message);
  }
  return absl::UnavailableError(message);
}

AttemptRecord OfflineRecord(const std::string& status, const std::string& error) {
  AttemptRecord r;
  r.provider = kOffline;
  r.model = kOfflineModel;
  r.started = absl::Now();
  r.status = status;
  r.error = error;
  return r;
}

}  // namespace

Generator::Generator(GeneratorDefaults defaults, const TemplateSet& templates,
                     std::map<std::string, ProviderClient*> providers, CallAccounting& accounting,
                     EndpointAllowList allowed_endpoints)
    : defaults_(std::move(defaults)),
      templates_(templates),
      providers_(std::move(providers)),
      accounting_(accounting),
      allowed_endpoints_(std::move(allowed_endpoints)) {
  // A provider's base URL that does not parse stays usable as its own endpoint (a request
  // without base_url); only naming it in a request is refused.
  for (const auto& [name, provider] : providers_) {
    allowed_endpoints_.Add(provider->config().base_url).IgnoreError();
  }
}

absl::Status Generator::CheckSettings(const v1::LlmSettings& llm) const {
  return Resolve(llm).status();
}

absl::StatusOr<ProviderClient*> Generator::Resolve(const v1::LlmSettings& llm) const {
  if (!llm.base_url().empty()) RETURN_IF_ERROR(allowed_endpoints_.Check(llm.base_url()));
  const std::string name = llm.provider().empty() ? defaults_.provider : llm.provider();
  if (name == kOffline) return nullptr;
  auto it = providers_.find(name);
  if (it == providers_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown LLM provider \"", name, "\" (known: offline, openai, anthropic)"));
  }
  if (llm.model().empty() && defaults_.model.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no model for provider ", name, ": set llm.model or --llm_model"));
  }
  const ProviderConfig& config = it->second->config();
  const bool public_endpoint = (llm.base_url().empty() || llm.base_url() == config.base_url) &&
                               config.base_url == DefaultBaseUrl(config.protocol);
  if (public_endpoint && config.api_key.empty()) {
    const char* env = config.protocol == Protocol::kOpenAi ? "OPENAI" : "ANTHROPIC";
    return absl::FailedPreconditionError(absl::StrCat("no API key for ", name, ": set ", env,
                                                      "_API_KEY or --", name, "_api_key_file"));
  }
  return it->second;
}

ChatCall Generator::MakeCall(const v1::LlmSettings& llm, const Prompt& prompt) const {
  ChatCall call;
  call.model = llm.model().empty() ? defaults_.model : llm.model();
  call.system = prompt.system;
  call.user = prompt.user;
  call.temperature = llm.temperature() > 0 ? llm.temperature() : defaults_.temperature;
  call.max_tokens = llm.max_tokens() > 0 ? llm.max_tokens() : defaults_.max_tokens;
  return call;
}

absl::StatusOr<v1::GenerateResponse> Generator::Generate(const v1::GenerateRequest& request,
                                                         const std::function<bool()>& cancelled) {
  if (request.task_source().empty()) {
    return absl::InvalidArgumentError("task_source is required");
  }
  const std::string strategy = request.strategy().empty() ? "contrastive" : request.strategy();
  if (!ValidStrategy(strategy)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown strategy \"", strategy, "\" (known: contrastive, idea_branching, islands)"));
  }
  const uint32_t count = std::max<uint32_t>(1, request.num_candidates());
  if (count > defaults_.max_candidates) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_candidates ", count, " is above the limit ", defaults_.max_candidates));
  }
  if (!v1::Dialect_IsValid(request.dialect())) {
    return absl::InvalidArgumentError(absl::StrCat("unknown dialect ", request.dialect()));
  }
  ASSIGN_OR_RETURN(ProviderClient * provider, Resolve(request.llm()));
  RETURN_IF_ERROR(accounting_.CheckJob(request.job_id()));
  if (provider == nullptr) return GenerateOffline(request, request.dialect());

  const v1::Dialect dialect =
      request.dialect() == v1::DIALECT_UNSPECIFIED ? v1::DIALECT_NVRTC : request.dialect();
  absl::StatusOr<Prompt> prompt = BuildGeneratePrompt(templates_, request, strategy, dialect);
  if (!prompt.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot build the prompt: ", prompt.status().message()));
  }
  const ChatCall base = MakeCall(request.llm(), *prompt);

  std::vector<v1::GeneratedCandidate> candidates(count);
  std::vector<CallResult> results(count);
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      ChatCall call = base;
      if (request.seed() != 0) call.seed = request.seed() + i;
      results[i] = provider->Call(call, request.llm().base_url(), cancelled);
      v1::GeneratedCandidate& c = candidates[i];
      c.set_prompt(prompt->user);
      c.set_dialect(dialect);
      if (results[i].reply) {
        ParsedCompletion parsed =
            ParseCompletion(results[i].reply->text, dialect, results[i].reply->finish_reason);
        c.set_completion(results[i].reply->text);
        c.set_source(parsed.source);
        c.set_analysis(parsed.analysis);
        c.set_parse_error(parsed.error);
        if (!parsed.error.empty()) {
          results[i].attempts.back().status = kStatusParseError;
          results[i].attempts.back().error = parsed.error;
        }
      } else {
        c.set_parse_error(absl::StrCat("LLM call failed: ", results[i].error));
      }
      c.set_status(results[i].attempts.back().status);
      c.set_llm_call_id(accounting_.Record(request.job_id(), results[i].attempts));
    });
  }
  for (std::thread& t : threads) t.join();

  v1::GenerateResponse response;
  bool any_reply = false;
  for (uint32_t i = 0; i < count; ++i) {
    for (const AttemptRecord& a : results[i].attempts) {
      response.set_tokens_in(response.tokens_in() + a.tokens_in);
      response.set_tokens_out(response.tokens_out() + a.tokens_out);
    }
    any_reply = any_reply || results[i].reply.has_value();
    *response.add_candidates() = std::move(candidates[i]);
  }
  if (!any_reply) return AllCallsFailed(results.back().status, results.back().error);
  return response;
}

v1::GenerateResponse Generator::GenerateOffline(const v1::GenerateRequest& request,
                                                v1::Dialect dialect) {
  const uint32_t count = std::max<uint32_t>(1, request.num_candidates());
  OfflineResult offline =
      ProposeOffline(request.exemplars(), dialect, request.idea(), request.seed(), count);
  v1::GenerateResponse response;
  auto account = [&](v1::GeneratedCandidate& c, const std::string& status,
                     const std::string& error) {
    std::vector<AttemptRecord> records = {OfflineRecord(status, error)};
    c.set_status(status);
    c.set_llm_call_id(accounting_.Record(request.job_id(), records));
  };
  if (offline.proposals.empty()) {
    v1::GeneratedCandidate* c = response.add_candidates();
    c->set_dialect(dialect);
    c->set_parse_error(offline.error);
    account(*c, kStatusParseError, offline.error);
    return response;
  }
  for (OfflineProposal& p : offline.proposals) {
    v1::GeneratedCandidate* c = response.add_candidates();
    c->set_dialect(InferDialect(p.source));
    c->set_source(std::move(p.source));
    c->set_analysis(std::move(p.analysis));
    account(*c, kStatusOk, "");
  }
  return response;
}

absl::StatusOr<v1::ProposeIdeasResponse> Generator::ProposeIdeas(
    const v1::ProposeIdeasRequest& request, const std::function<bool()>& cancelled) {
  if (request.task_source().empty()) {
    return absl::InvalidArgumentError("task_source is required");
  }
  const uint32_t count = request.num_ideas() > 0 ? request.num_ideas() : defaults_.default_ideas;
  if (count > defaults_.max_candidates) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_ideas ", count, " is above the limit ", defaults_.max_candidates));
  }
  ASSIGN_OR_RETURN(ProviderClient * provider, Resolve(request.llm()));
  RETURN_IF_ERROR(accounting_.CheckJob(request.job_id()));

  v1::ProposeIdeasResponse response;
  std::vector<AttemptRecord> records;
  if (provider == nullptr) {
    for (std::string& idea : OfflineIdeas(request, count)) response.add_ideas(std::move(idea));
    if (response.ideas().empty()) {
      response.set_parse_error(
          "offline proposer: no exemplar declares tunable parameters to propose ideas about");
    }
    records.push_back(OfflineRecord(response.ideas().empty() ? kStatusParseError : kStatusOk,
                                    response.parse_error()));
  } else {
    absl::StatusOr<Prompt> prompt = BuildIdeasPrompt(templates_, request, count);
    if (!prompt.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot build the prompt: ", prompt.status().message()));
    }
    ChatCall call = MakeCall(request.llm(), *prompt);
    if (request.seed() != 0) call.seed = request.seed();
    CallResult result = provider->Call(call, request.llm().base_url(), cancelled);
    records = std::move(result.attempts);
    for (const AttemptRecord& a : records) {
      response.set_tokens_in(response.tokens_in() + a.tokens_in);
      response.set_tokens_out(response.tokens_out() + a.tokens_out);
    }
    if (!result.reply) {
      accounting_.Record(request.job_id(), records);
      return AllCallsFailed(result.status, result.error);
    }
    response.set_prompt(prompt->user);
    response.set_completion(result.reply->text);
    for (std::string& idea : ParseIdeas(result.reply->text, count)) {
      response.add_ideas(std::move(idea));
    }
    if (response.ideas().empty()) {
      response.set_parse_error("no ideas in the reply (expected lines starting with IDEA:)");
      records.back().status = kStatusParseError;
      records.back().error = response.parse_error();
    }
  }
  response.set_llm_call_id(accounting_.Record(request.job_id(), records));
  return response;
}

}  // namespace kforge::gateway
