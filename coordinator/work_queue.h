// The part of the evaluation queue that a worker's stream uses (coordinator/lease_dispatcher.h):
// lease evaluations to a worker, extend its leases, store a result together with its next
// leases, hand leases back, and mark the worker. QueueStore (queue_store.h) is the durable
// implementation in PostgreSQL, FakeWorkQueue (fake_work_queue.h) the in-memory one for tests.
//
// Contract of every implementation:
//  * a worker is offered evaluations of its GPU type or of "any", none while an operator has
//    drained it;
//  * a lease belongs to one worker: only that worker's heartbeats extend it, only its result
//    completes it, and a result for a lease that no longer exists or is another worker's
//    stores nothing (Completion.stored false);
//  * a released lease goes back to the queue at its old position, its attempt not counted;
//  * a refused result's lease goes back the same way, its attempt counted, unless that was
//    the evaluation's last attempt: then the evaluation ends (rule result_refused), so that a
//    result the coordinator refuses whoever produces it is not leased forever;
//  * a result carrying the task's or the candidate's SHA-256 is stored only when they are the
//    leased evaluation's (Completion.mismatch says why not).
// Errors: UNAVAILABLE or ABORTED are transient (the database restarting), worth retrying;
// anything else is not.
//
// Thread-safety: implementations are called from every stream's threads at once.
#ifndef KFORGE_COORDINATOR_WORK_QUEUE_H_
#define KFORGE_COORDINATOR_WORK_QUEUE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kforge/v1/eval.pb.h"

namespace kforge {

// What a worker asks for: up to `max_leases` evaluations of its type or of "any".
struct LeaseRequest {
  std::string worker_id;
  std::string gpu_type;
  int max_leases = 0;
  double lease_timeout_s = 15;
};

struct LeaseGrant {
  std::string lease_id;
  int64_t evaluation_id = 0;
  int attempt = 0;
  std::string task_name;
  std::string task_source;
  std::string task_options_json;
  std::string candidate_source;
  std::string dialect;
  std::string settings_json;
  double waited_s = 0;  // from enqueue to this lease
};

struct Leased {
  std::vector<LeaseGrant> grants;
  // Queue rows, per GPU type, that the lease statement locked but did not take: it locks the
  // best rows of both lanes and keeps the best of those, and concurrent leasers skipped the
  // rest meanwhile. Worth a wake-up for streams that may have found nothing because of them.
  std::map<std::string, int64_t> passed_over;
};

struct Completion {
  bool stored = false;   // false: the lease no longer existed (reclaimed, already completed)
  std::string batch_id;  // of the stored evaluation; empty when none
  // Not empty: the result names another task or candidate than the lease's (the field and
  // both hashes); nothing was stored and the lease still exists, for the caller to refuse.
  std::string mismatch;
  Leased next;  // leased in the same transaction
};

// What became of a refused result's evaluation.
struct Refusal {
  std::string requeued_gpu_type;  // back in the queue for this type; empty when not
  std::string ended_batch_id;     // it used its attempts up and ended: its batch; else empty
};

class WorkQueue {
 public:
  virtual ~WorkQueue() = default;

  // Up to request.max_leases evaluations for the worker.
  virtual absl::StatusOr<Leased> Lease(const LeaseRequest& request) = 0;
  // Extends the deadlines of the worker's listed leases and records its heartbeat.
  virtual absl::Status Heartbeat(const std::string& worker_id,
                                 const std::vector<std::string>& lease_ids,
                                 double lease_timeout_s) = 0;
  // Stores the result of `lease_id`, held by next.worker_id whose GPU type is next.gpu_type,
  // and leases up to next.max_leases more to the same worker.
  virtual absl::StatusOr<Completion> CompleteAndLease(const std::string& lease_id,
                                                      const v1::EvalResult& result,
                                                      const LeaseRequest& next) = 0;
  // Hands an unrun lease back (a draining worker, an unsent lease); the attempt is not counted,
  // and it keeps its position. Returns the GPU type it was queued for; empty when the lease no
  // longer existed.
  virtual absl::StatusOr<std::string> Release(const std::string& lease_id,
                                              const std::string& worker_id) = 0;
  // Hands back the lease of a result the coordinator refused (malformed, or one the database
  // cannot store), the attempt counted: back to the queue at its position, or, after the
  // evaluation's last attempt, ended as runtime_error with rule result_refused and a reason
  // that quotes `reason`. Both fields of the Refusal are empty when the lease no longer
  // existed.
  virtual absl::StatusOr<Refusal> Refuse(const std::string& lease_id, const std::string& worker_id,
                                         const std::string& reason) = 0;
  // Hands back every lease `worker_id` holds (its credentials were revoked), attempts not
  // counted. Returns the evaluations requeued per GPU type.
  virtual absl::StatusOr<std::map<std::string, int64_t>> ReleaseWorkerLeases(
      const std::string& worker_id) = 0;
  // Sets the worker's listed state ("gone": drained and left).
  virtual absl::Status MarkWorker(const std::string& worker_id, const std::string& state) = 0;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_WORK_QUEUE_H_
