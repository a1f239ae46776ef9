#include "llm_gateway/provider_client.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace kforge::gateway {
namespace {

bool Retryable(const std::string& status) {
  return status == kStatusHttp429 || status == kStatusHttp5xx || status == kStatusTimeout ||
         status == kStatusNetworkError;
}

std::string BodyPrefix(const std::string& body) {
  constexpr size_t kMax = 300;
  return body.size() <= kMax ? body : body.substr(0, kMax) + "...";
}

double Jitter01() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0, 1)(rng);
}

// Classifies one HTTP exchange; fills status/error (and the reply on success).
void Classify(Protocol protocol, const HttpReply& http, AttemptRecord& attempt,
              std::optional<ChatReply>& reply) {
  if (http.failure == HttpReply::Failure::kTimeout) {
    attempt.status = kStatusTimeout;
    attempt.error = "request timed out: " + http.error;
    return;
  }
  if (http.failure == HttpReply::Failure::kNetwork) {
    attempt.status = kStatusNetworkError;
    attempt.error = http.error;
    return;
  }
  if (http.status < 200 || http.status >= 300) {
    attempt.status = http.status == 429   ? kStatusHttp429
                     : http.status == 408 ? kStatusTimeout
                     : http.status >= 500 ? kStatusHttp5xx
                                          : kStatusHttp4xx;
    attempt.error = absl::StrCat("HTTP ", http.status, ": ", BodyPrefix(http.body));
    return;
  }
  absl::StatusOr<ChatReply> decoded = DecodeChatReply(protocol, http.body);
  if (!decoded.ok()) {
    attempt.status = kStatusBadResponse;
    attempt.error = std::string(decoded.status().message());
    return;
  }
  attempt.status = kStatusOk;
  attempt.tokens_in = decoded->tokens_in;
  attempt.tokens_out = decoded->tokens_out;
  reply = std::move(decoded).value();
}

}  // namespace

ProviderClient::ProviderClient(ProviderConfig config, HttpTransport& transport)
    : config_(std::move(config)),
      transport_(transport),
      concurrency_(config_.max_concurrency),
      rate_(config_.requests_per_minute) {}

std::string ProviderClient::Redact(std::string text) const {
  if (config_.api_key.empty()) return text;
  return absl::StrReplaceAll(text, {{config_.api_key, "[redacted]"}});
}

CallResult ProviderClient::Call(const ChatCall& call, const std::string& base_url,
                                const std::function<bool()>& cancelled) {
  const bool own_endpoint = base_url.empty() || base_url == config_.base_url;
  HttpRequest request =
      EncodeChatRequest(config_.protocol, own_endpoint ? config_.base_url : base_url,
                        own_endpoint ? config_.api_key : "", config_.anthropic_version, call);
  request.timeout_s = config_.timeout_s;
  request.connect_timeout_s = config_.connect_timeout_s;

  CallResult result;
  const int max_attempts = std::max(1, config_.retry.max_attempts);
  for (int n = 1; n <= max_attempts; ++n) {
    absl::SleepFor(rate_.Reserve(absl::Now()) - absl::Now());
    concurrency_.Acquire();
    AttemptRecord attempt;
    attempt.provider = config_.name;
    attempt.model = call.model;
    attempt.started = absl::Now();
    HttpReply http = transport_.Post(request);
    attempt.latency_ms = absl::ToDoubleMilliseconds(absl::Now() - attempt.started);
    concurrency_.Release();

    result.reply.reset();
    Classify(config_.protocol, http, attempt, result.reply);
    attempt.error = Redact(std::move(attempt.error));
    result.status = attempt.status;
    result.error = attempt.error;
    result.attempts.push_back(std::move(attempt));
    if (!Retryable(result.status) || n == max_attempts) break;
    if (cancelled && cancelled()) {
      result.error += " (no retry: the request was cancelled)";
      break;
    }
    absl::SleepFor(
        BackoffDelay(config_.retry, n, Jitter01(), ParseRetryAfter(http.retry_after, absl::Now())));
  }
  if (!result.reply && result.attempts.size() > 1) {
    result.error = absl::StrCat(result.error, " (after ", result.attempts.size(), " attempts)");
  }
  return result;
}

}  // namespace kforge::gateway
