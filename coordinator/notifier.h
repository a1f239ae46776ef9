// Wakes threads waiting for "something changed" (work enqueued, a result stored) within one
// coordinator process. Waiters also time out and poll PostgreSQL, so other coordinators'
// changes are seen too; the notifier only cuts latency.
//
// Thread-safe.
#ifndef KFORGE_COORDINATOR_NOTIFIER_H_
#define KFORGE_COORDINATOR_NOTIFIER_H_

#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kforge {

class Notifier {
 public:
  uint64_t generation() {
    absl::MutexLock lock(&mu_);
    return generation_;
  }
  void Notify() {
    absl::MutexLock lock(&mu_);
    ++generation_;
  }
  // Returns once the generation differs from `seen` or `timeout` passed.
  void WaitChange(uint64_t seen, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto changed = [this, seen]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return generation_ != seen; };
    mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  }

 private:
  absl::Mutex mu_;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_NOTIFIER_H_
