#include "llm_gateway/provider_protocol.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kforge::gateway {
namespace {

using json = nlohmann::json;

std::string Endpoint(std::string base, const char* path) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (absl::EndsWith(base, "/v1")) base.resize(base.size() - 3);
  return base + path;
}

std::string Prefix(const std::string& body) {
  constexpr size_t kMax = 200;
  return body.size() <= kMax ? body : body.substr(0, kMax) + "...";
}

int64_t IntOr0(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

absl::StatusOr<ChatReply> DecodeOpenAi(const json& j) {
  ChatReply reply;
  const json* choices = j.contains("choices") ? &j["choices"] : nullptr;
  if (choices == nullptr || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object() || !(*choices)[0].contains("message") ||
      !(*choices)[0]["message"].is_object()) {
    return absl::InvalidArgumentError("reply has no choices[0].message");
  }
  const json& choice = (*choices)[0];
  const json& content = choice["message"].value("content", json());
  if (content.is_string()) reply.text = content.get<std::string>();
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
    reply.finish_reason = choice["finish_reason"].get<std::string>();
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    reply.tokens_in = IntOr0(j["usage"], "prompt_tokens");
    reply.tokens_out = IntOr0(j["usage"], "completion_tokens");
  }
  return reply;
}

absl::StatusOr<ChatReply> DecodeAnthropic(const json& j) {
  ChatReply reply;
  if (!j.contains("content") || !j["content"].is_array()) {
    return absl::InvalidArgumentError("reply has no content array");
  }
  for (const json& block : j["content"]) {
    if (block.is_object() && block.value("type", "") == "text" && block.contains("text") &&
        block["text"].is_string()) {
      reply.text += block["text"].get<std::string>();
    }
  }
  if (j.contains("stop_reason") && j["stop_reason"].is_string()) {
    reply.finish_reason = j["stop_reason"].get<std::string>();
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    reply.tokens_in = IntOr0(j["usage"], "input_tokens");
    reply.tokens_out = IntOr0(j["usage"], "output_tokens");
  }
  return reply;
}

}  // namespace

bool ParseProtocol(const std::string& provider, Protocol* out) {
  if (provider == "openai") {
    *out = Protocol::kOpenAi;
    return true;
  }
  if (provider == "anthropic") {
    *out = Protocol::kAnthropic;
    return true;
  }
  return false;
}

const char* DefaultBaseUrl(Protocol p) {
  return p == Protocol::kOpenAi ? "https://api.openai.com" : "https://api.anthropic.com";
}

HttpRequest EncodeChatRequest(Protocol p, const std::string& base_url, const std::string& api_key,
                              const std::string& anthropic_version, const ChatCall& call) {
  HttpRequest request;
  request.headers.emplace_back("Content-Type", "application/json");
  json body = {
      {"model", call.model}, {"max_tokens", call.max_tokens}, {"temperature", call.temperature}};
  if (p == Protocol::kOpenAi) {
    request.url = Endpoint(base_url, "/v1/chat/completions");
    if (!api_key.empty()) request.headers.emplace_back("Authorization", "Bearer " + api_key);
    json messages = json::array();
    if (!call.system.empty()) messages.push_back({{"role", "system"}, {"content", call.system}});
    messages.push_back({{"role", "user"}, {"content", call.user}});
    body["messages"] = std::move(messages);
    if (call.seed) body["seed"] = *call.seed;
  } else {
    request.url = Endpoint(base_url, "/v1/messages");
    if (!api_key.empty()) request.headers.emplace_back("x-api-key", api_key);
    request.headers.emplace_back("anthropic-version", anthropic_version);
    if (!call.system.empty()) body["system"] = call.system;
    body["messages"] = json::array({{{"role", "user"}, {"content", call.user}}});
  }
  request.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return request;
}

absl::StatusOr<ChatReply> DecodeChatReply(Protocol p, const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("reply is not a JSON object: ", Prefix(body)));
  }
  absl::StatusOr<ChatReply> reply = p == Protocol::kOpenAi ? DecodeOpenAi(j) : DecodeAnthropic(j);
  if (!reply.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(reply.status().message(), ": ", Prefix(body)));
  }
  return reply;
}

}  // namespace kforge::gateway
