// What the gateway records about each provider call (one HTTP attempt, or one offline
// proposal): the content of an llm_calls row.
#ifndef KFORGE_LLM_GATEWAY_CALL_RECORD_H_
#define KFORGE_LLM_GATEWAY_CALL_RECORD_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"

namespace kforge::gateway {

// llm_calls.status values.
inline constexpr char kStatusOk[] = "ok";
inline constexpr char kStatusParseError[] = "parse_error";
inline constexpr char kStatusHttp429[] = "http_429";
inline constexpr char kStatusHttp5xx[] = "http_5xx";
inline constexpr char kStatusHttp4xx[] = "http_4xx";
inline constexpr char kStatusTimeout[] = "timeout";
inline constexpr char kStatusNetworkError[] = "network_error";
inline constexpr char kStatusBadResponse[] = "bad_response";

struct AttemptRecord {
  std::string provider;
  std::string model;
  int64_t tokens_in = 0;
  int64_t tokens_out = 0;
  double latency_ms = 0;
  double cost_usd = 0;  // from the price table; 0 when the model is unknown
  absl::Time started = absl::UnixEpoch();
  std::string status;
  std::string error;  // "" when ok; never holds an API key
};

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_CALL_RECORD_H_
