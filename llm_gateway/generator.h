// The gateway's logic behind GatewayService: validates a request, builds the prompt, calls the
// provider once per wanted candidate (concurrently; the provider client enforces its limits),
// parses each completion, and accounts every call. Provider "offline" (the default when none
// is configured) mutates the exemplars' tunable parameters instead (offline_proposer.h).
//
// A request's llm.base_url must lie under an allowed endpoint (endpoint_allowlist.h: the
// operator's list plus every provider's own base URL), else PERMISSION_DENIED before anything
// is sent, whatever the provider (offline included).
//
// Errors: INVALID_ARGUMENT for a malformed request, NOT_FOUND for an unknown job,
// FAILED_PRECONDITION when the provider cannot be used (no API key for its public endpoint, a
// broken template override) or answered 4xx to every call, UNAVAILABLE when every call failed
// with 429/5xx/timeouts/network errors after retries. When some calls succeeded, the failed
// ones are entries with `status` and `parse_error` saying what failed.
//
// Thread-safety: thread-safe; every request runs on its caller's thread plus one thread per
// provider call. The providers, templates and accounting must outlive the generator.
#ifndef KFORGE_LLM_GATEWAY_GENERATOR_H_
#define KFORGE_LLM_GATEWAY_GENERATOR_H_

#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "kforge/v1/gateway.pb.h"
#include "llm_gateway/call_accounting.h"
#include "llm_gateway/endpoint_allowlist.h"
#include "llm_gateway/prompt_builder.h"
#include "llm_gateway/provider_client.h"
#include "llm_gateway/templates.h"

namespace kforge::gateway {

struct GeneratorDefaults {
  std::string provider = "offline";  // for requests that name none
  std::string model;                 // for requests that name none
  double temperature = 0.7;          // for requests with temperature 0
  uint32_t max_tokens = 8192;        // for requests with max_tokens 0
  uint32_t max_candidates = 64;      // larger num_candidates: INVALID_ARGUMENT
  uint32_t default_ideas = 4;        // for ProposeIdeas with num_ideas 0
};

class Generator {
 public:
  // `providers`: by name ("openai", "anthropic"); not owned. `allowed_endpoints`: where a
  // request's llm.base_url may point besides the providers' own base URLs.
  Generator(GeneratorDefaults defaults, const TemplateSet& templates,
            std::map<std::string, ProviderClient*> providers, CallAccounting& accounting,
            EndpointAllowList allowed_endpoints = {});

  // What Generate and ProposeIdeas would refuse about `llm` before calling anyone (an unknown
  // provider, a missing model or key, a base_url that is not allowed); OK otherwise.
  absl::Status CheckSettings(const v1::LlmSettings& llm) const;

  // `cancelled` (optional) tells when the caller gave up (RPC deadline or cancellation): calls
  // then stop retrying.
  absl::StatusOr<v1::GenerateResponse> Generate(const v1::GenerateRequest& request,
                                                const std::function<bool()>& cancelled = {});
  absl::StatusOr<v1::ProposeIdeasResponse> ProposeIdeas(
      const v1::ProposeIdeasRequest& request, const std::function<bool()>& cancelled = {});

 private:
  // The provider for `llm` (nullptr for offline); errors for a base_url that is not allowed,
  // unknown providers, a missing model, or a missing key for the public endpoint.
  absl::StatusOr<ProviderClient*> Resolve(const v1::LlmSettings& llm) const;
  ChatCall MakeCall(const v1::LlmSettings& llm, const Prompt& prompt) const;
  v1::GenerateResponse GenerateOffline(const v1::GenerateRequest& request, v1::Dialect dialect);

  const GeneratorDefaults defaults_;
  const TemplateSet& templates_;
  const std::map<std::string, ProviderClient*> providers_;
  CallAccounting& accounting_;
  EndpointAllowList allowed_endpoints_;
};

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_GENERATOR_H_
