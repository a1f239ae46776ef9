// An in-memory WorkQueue (work_queue.h) for unit tests of what drives the queue (the lease
// dispatcher): evaluations queued per GPU type in order, leases owned by one worker each with
// a deadline on a fake clock, results stored once, operator drains, and injected failures. It
// keeps the contract of work_queue.h; it does not model tenants, priorities, batches or content
// hashes.
//
// Thread-safe (one mutex); the inspection methods read a consistent snapshot.
#ifndef KFORGE_COORDINATOR_FAKE_WORK_QUEUE_H_
#define KFORGE_COORDINATOR_FAKE_WORK_QUEUE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/work_queue.h"

namespace kforge {

class FakeWorkQueue : public WorkQueue {
 public:
  absl::StatusOr<Leased> Lease(const LeaseRequest& request) override;
  absl::Status Heartbeat(const std::string& worker_id, const std::vector<std::string>& lease_ids,
                         double lease_timeout_s) override;
  absl::StatusOr<Completion> CompleteAndLease(const std::string& lease_id,
                                              const v1::EvalResult& result,
                                              const LeaseRequest& next) override;
  absl::StatusOr<std::string> Release(const std::string& lease_id,
                                      const std::string& worker_id) override;
  absl::StatusOr<Refusal> Refuse(const std::string& lease_id, const std::string& worker_id,
                                 const std::string& reason) override;
  absl::StatusOr<std::map<std::string, int64_t>> ReleaseWorkerLeases(
      const std::string& worker_id) override;
  absl::Status MarkWorker(const std::string& worker_id, const std::string& state) override;

  // Queues one evaluation for `gpu_type` ("any" allowed); returns its id.
  int64_t Enqueue(const std::string& gpu_type, const std::string& task_options_json = "{}");
  // An operator drain: the worker is offered nothing until undrained.
  void SetDrained(const std::string& worker_id, bool drained);
  // The next `count` CompleteAndLease calls fail with `status`.
  void FailCompletions(absl::Status status, int count);
  // Moves the fake clock on, then reclaims the leases past their deadline (back to the queue,
  // attempt kept); returns how many.
  int AdvanceAndReclaim(double seconds);

  std::vector<int64_t> Queued();  // evaluation ids waiting, in lease order
  int Attempts(int64_t evaluation_id);
  std::optional<v1::EvalResult> StoredResult(int64_t evaluation_id);
  // The worker holding `lease_id`; empty when the lease does not exist.
  std::string Holder(const std::string& lease_id);
  std::string WorkerState(const std::string& worker_id);
  int completion_calls();

 private:
  struct Evaluation {
    std::string gpu_type;
    std::string task_options_json;
    int attempts = 0;
    std::optional<v1::EvalResult> result;
  };
  static constexpr int kMaxAttempts = 3;  // evaluations.max_attempts' default
  struct Held {
    std::string worker_id;
    int64_t evaluation_id = 0;
    double deadline_s = 0;
  };

  Leased LeaseLocked(const LeaseRequest& request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Back into the queue at its position (ids are enqueue order).
  void RequeueLocked(int64_t evaluation_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  double now_s_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_evaluation_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t next_lease_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, Evaluation> evaluations_ ABSL_GUARDED_BY(mu_);
  std::deque<int64_t> queued_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Held> leases_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> drained_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> worker_states_ ABSL_GUARDED_BY(mu_);
  absl::Status completion_failure_ ABSL_GUARDED_BY(mu_);
  int completion_failures_left_ ABSL_GUARDED_BY(mu_) = 0;
  int completion_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_FAKE_WORK_QUEUE_H_
