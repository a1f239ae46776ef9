// The two wire protocols the gateway speaks: OpenAI-compatible chat completions
// (POST {base}/v1/chat/completions, `Authorization: Bearer KEY`; OpenAI, vLLM, SGLang,
// DeepSeek...) and Anthropic messages (POST {base}/v1/messages, `x-api-key`,
// `anthropic-version`). Encoding a request and decoding a reply, nothing else: no I/O.
//
// Pure functions; thread-safe.
#ifndef KFORGE_LLM_GATEWAY_PROVIDER_PROTOCOL_H_
#define KFORGE_LLM_GATEWAY_PROVIDER_PROTOCOL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "llm_gateway/http_transport.h"

namespace kforge::gateway {

enum class Protocol { kOpenAi, kAnthropic };

// "openai" / "anthropic"; false for anything else.
bool ParseProtocol(const std::string& provider, Protocol* out);
// The public endpoint of each protocol's vendor.
const char* DefaultBaseUrl(Protocol p);

struct ChatCall {
  std::string model;
  std::string system;  // instructions; may be empty
  std::string user;    // the prompt
  double temperature = 0.7;
  uint32_t max_tokens = 8192;
  std::optional<uint64_t> seed;  // OpenAI-compatible servers only (Anthropic has none)
};

struct ChatReply {
  std::string text;
  int64_t tokens_in = 0;
  int64_t tokens_out = 0;
  std::string finish_reason;  // "stop", "length", "end_turn", "max_tokens"...
};

// Builds the POST for `call`. `base_url` may end in "/" or "/v1"; both are accepted. An empty
// `api_key` sends no credential header (local vLLM/SGLang servers need none).
HttpRequest EncodeChatRequest(Protocol p, const std::string& base_url, const std::string& api_key,
                              const std::string& anthropic_version, const ChatCall& call);

// Decodes a 2xx body. INVALID_ARGUMENT when it is not JSON or lacks the protocol's fields;
// the message says which and never quotes more than a short prefix of the body.
absl::StatusOr<ChatReply> DecodeChatReply(Protocol p, const std::string& body);

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_PROVIDER_PROTOCOL_H_
