#include "llm_gateway/limits.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/numbers.h"

namespace kforge::gateway {

void ConcurrencyLimit::Acquire() {
  absl::MutexLock lock(&mu_);
  if (limit_ > 0) {
    mu_.Await(absl::Condition(
        +[](ConcurrencyLimit* self)
             ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) { return self->in_use_ < self->limit_; },
        this));
  }
  ++in_use_;
}

void ConcurrencyLimit::Release() {
  absl::MutexLock lock(&mu_);
  --in_use_;
}

int ConcurrencyLimit::in_use() const {
  absl::MutexLock lock(&mu_);
  return in_use_;
}

absl::Time RateLimiter::Reserve(absl::Time now) {
  if (per_minute_ <= 0) return now;
  absl::MutexLock lock(&mu_);
  absl::Time slot = std::max(now, next_);
  next_ = slot + absl::Seconds(60.0 / per_minute_);
  return slot;
}

absl::Duration BackoffDelay(const RetryPolicy& policy, int attempt, double jitter01,
                            std::optional<absl::Duration> retry_after) {
  double base = policy.initial_backoff_s * std::pow(2.0, std::max(0, attempt - 1));
  base = std::min(base, policy.max_backoff_s);
  absl::Duration delay = absl::Seconds(base / 2 + base / 2 * jitter01);
  if (retry_after) {
    delay = std::max(delay, std::min(*retry_after, absl::Seconds(policy.max_backoff_s)));
  }
  return delay;
}

std::optional<absl::Duration> ParseRetryAfter(const std::string& value, absl::Time now) {
  if (value.empty()) return std::nullopt;
  double seconds = 0;
  if (absl::SimpleAtod(value, &seconds)) {
    if (seconds < 0 || !std::isfinite(seconds)) return std::nullopt;
    return absl::Seconds(seconds);
  }
  time_t when = curl_getdate(value.c_str(), nullptr);
  if (when < 0) return std::nullopt;
  return std::max(absl::ZeroDuration(), absl::FromTimeT(when) - now);
}

}  // namespace kforge::gateway
