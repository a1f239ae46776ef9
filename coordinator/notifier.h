// Wakes threads of one coordinator process when the queue changed in a way they care about:
//
//  work        a worker stream with free slots that found no work arms its WorkWaiter;
//              WorkAdded(type, n) wakes armed waiters of that GPU type (any type for "any"),
//              longest armed first, until their free slots cover the n new evaluations. A
//              stream whose slots are all busy is never woken by new work.
//  batch       an EvaluateBatch stream holds a BatchWatch; BatchChanged(batch) wakes only the
//              watches of that batch.
//
// Waiters also time out and poll PostgreSQL, so other coordinators' changes are seen too; the
// notifier only cuts latency. Each waiter has its own condition variable: a wake-up reaches
// the threads it names and no others.
//
// Thread-safe. A WorkWaiter or BatchWatch must not outlive its Notifier; each is used by the
// threads of one stream.
#ifndef KFORGE_COORDINATOR_NOTIFIER_H_
#define KFORGE_COORDINATOR_NOTIFIER_H_

#include <cstdint>
#include <list>
#include <map>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kforge {

class Notifier {
 public:
  class WorkWaiter;
  class BatchWatch;

  Notifier() = default;
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // `count` evaluations of `gpu_type` were queued (committed).
  void WorkAdded(const std::string& gpu_type, int64_t count);
  // A result of `batch_id` was stored (committed).
  void BatchChanged(const std::string& batch_id);

 private:
  absl::Mutex mu_;
  // Armed waiters per GPU type, longest armed first.
  std::map<std::string, std::list<WorkWaiter*>> armed_ ABSL_GUARDED_BY(mu_);
  std::multimap<std::string, BatchWatch*> watches_ ABSL_GUARDED_BY(mu_);
};

// A worker stream's wake-up: by new work of its type while armed, or by Wake().
class Notifier::WorkWaiter {
 public:
  WorkWaiter(Notifier& notifier, std::string gpu_type)
      : notifier_(notifier), gpu_type_(std::move(gpu_type)) {}
  ~WorkWaiter() { Disarm(); }
  WorkWaiter(const WorkWaiter&) = delete;
  WorkWaiter& operator=(const WorkWaiter&) = delete;

  uint64_t generation() {
    absl::MutexLock lock(&notifier_.mu_);
    return generation_;
  }
  // The stream has `free_slots` and is about to look at the queue: work queued from now on
  // wakes it. Call before the look, so work committed in between is not missed.
  void Arm(int free_slots);
  void Disarm();
  // Wakes the waiter whether armed or not.
  void Wake();
  // Returns once woken after `seen` (see generation()) or at `timeout`; disarmed either way.
  void Wait(uint64_t seen, absl::Duration timeout);

 private:
  friend class Notifier;
  void WakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(notifier_.mu_);
  void DisarmLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(notifier_.mu_);

  Notifier& notifier_;
  const std::string gpu_type_;
  absl::CondVar woken_;
  uint64_t generation_ ABSL_GUARDED_BY(notifier_.mu_) = 0;
  int free_slots_ ABSL_GUARDED_BY(notifier_.mu_) = 0;
  bool armed_ ABSL_GUARDED_BY(notifier_.mu_) = false;
  std::list<WorkWaiter*>::iterator position_ ABSL_GUARDED_BY(notifier_.mu_);
};

// An EvaluateBatch stream's wake-up: registered for one batch for its lifetime.
class Notifier::BatchWatch {
 public:
  BatchWatch(Notifier& notifier, const std::string& batch_id);
  ~BatchWatch();
  BatchWatch(const BatchWatch&) = delete;
  BatchWatch& operator=(const BatchWatch&) = delete;

  uint64_t generation() {
    absl::MutexLock lock(&notifier_.mu_);
    return generation_;
  }
  // Returns once a result of the batch was stored after `seen`, or at `deadline`.
  void WaitChange(uint64_t seen, absl::Time deadline);

 private:
  friend class Notifier;
  Notifier& notifier_;
  std::multimap<std::string, BatchWatch*>::iterator entry_;  // written by the constructor only
  absl::CondVar changed_;
  uint64_t generation_ ABSL_GUARDED_BY(notifier_.mu_) = 0;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_NOTIFIER_H_
