// One configured LLM provider: sends a chat call with retries (exponential backoff with
// jitter on 429, 5xx, timeouts and network errors; Retry-After honoured), a request timeout,
// a concurrency cap and a rate limit. Every HTTP attempt is reported back as an
// AttemptRecord for accounting; the caller stores them (one llm_calls row per attempt).
//
// Secrets: the API key goes only into the request headers, and only to the configured base
// URL: a request that overrides base_url is sent without the key, so a job cannot send the
// gateway's key to a server of its choosing. Error texts are scrubbed of the key.
//
// Thread-safety: Call is thread-safe; the limits are shared by all callers of one client.
// The transport must outlive the client.
#ifndef KFORGE_LLM_GATEWAY_PROVIDER_CLIENT_H_
#define KFORGE_LLM_GATEWAY_PROVIDER_CLIENT_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "llm_gateway/call_record.h"
#include "llm_gateway/http_transport.h"
#include "llm_gateway/limits.h"
#include "llm_gateway/provider_protocol.h"

namespace kforge::gateway {

struct ProviderConfig {
  std::string name;  // "openai", "anthropic": llm_calls.provider
  Protocol protocol = Protocol::kOpenAi;
  std::string base_url;  // where the key may be sent
  std::string api_key;   // may be empty (local servers)
  std::string anthropic_version = "2023-06-01";
  double timeout_s = 300;
  double connect_timeout_s = 10;
  RetryPolicy retry;
  int max_concurrency = 8;         // requests in flight at once; 0: unlimited
  double requests_per_minute = 0;  // 0: unlimited
};

struct CallResult {
  std::vector<AttemptRecord> attempts;  // in order; the last one decided
  std::optional<ChatReply> reply;       // set when the last attempt succeeded
  std::string status;                   // the last attempt's status
  std::string error;                    // the last attempt's error ("" when ok)
};

class ProviderClient {
 public:
  ProviderClient(ProviderConfig config, HttpTransport& transport);

  // `base_url`: the request's override, or "" for the configured one. `cancelled`, when set,
  // is asked before each retry: once it says true, no further attempt is made.
  CallResult Call(const ChatCall& call, const std::string& base_url,
                  const std::function<bool()>& cancelled = {});

  const ProviderConfig& config() const { return config_; }
  // Replaces the API key in `text` by "[redacted]".
  std::string Redact(std::string text) const;

 private:
  const ProviderConfig config_;
  HttpTransport& transport_;
  ConcurrencyLimit concurrency_;
  RateLimiter rate_;
};

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_PROVIDER_CLIENT_H_
