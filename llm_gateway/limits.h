// Flow control towards one provider: a concurrency cap, a request-rate limit, and the retry
// backoff schedule. The rate limiter and the backoff are pure arithmetic on times the caller
// passes in, so they are tested without sleeping; ProviderClient does the waiting.
//
// Thread-safety: ConcurrencyLimit and RateLimiter are thread-safe. BackoffDelay is pure.
#ifndef KFORGE_LLM_GATEWAY_LIMITS_H_
#define KFORGE_LLM_GATEWAY_LIMITS_H_

#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kforge::gateway {

// At most `limit` holders at once (0: unlimited). Acquire blocks until a place is free.
class ConcurrencyLimit {
 public:
  explicit ConcurrencyLimit(int limit) : limit_(limit) {}
  void Acquire();
  void Release();
  int in_use() const;

 private:
  const int limit_;
  mutable absl::Mutex mu_;
  int in_use_ ABSL_GUARDED_BY(mu_) = 0;
};

// Spaces request starts evenly: at most `per_minute` per minute (0: unlimited), no bursts.
// Reserve returns when the caller may start (now or later) and books that slot.
class RateLimiter {
 public:
  explicit RateLimiter(double per_minute) : per_minute_(per_minute) {}
  absl::Time Reserve(absl::Time now);

 private:
  const double per_minute_;
  absl::Mutex mu_;
  absl::Time next_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

struct RetryPolicy {
  int max_attempts = 4;  // including the first
  double initial_backoff_s = 1;
  double max_backoff_s = 60;  // also caps a server's Retry-After
};

// The wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed: exponential
// (initial x 2^(attempt-1), capped), with "equal jitter" (half fixed, half `jitter01` in
// [0, 1) of it), and never shorter than the server's Retry-After (itself capped).
absl::Duration BackoffDelay(const RetryPolicy& policy, int attempt, double jitter01,
                            std::optional<absl::Duration> retry_after);

// Retry-After as delta-seconds or an HTTP date (relative to `now`); nullopt when absent or
// unreadable.
std::optional<absl::Duration> ParseRetryAfter(const std::string& value, absl::Time now);

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_LIMITS_H_
