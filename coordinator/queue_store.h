// The durable evaluation queue in PostgreSQL: batches in, leases out, results back exactly
// once, expired leases reclaimed. All state lives in the database, so any number of
// coordinators (or a restarted one) see the same queue.
//
//  Enqueue     one transaction: batch row, candidates (content-addressed), one evaluation per
//              candidate x GPU type, one queue row each, inserted a statement per table
//  Lease       fair share between tenants first: each lease goes to the tenant with the fewest
//              evaluations in flight on workers of the asking worker's GPU type, among the
//              tenants with queued work in the two lanes it may take from (its own GPU type and
//              "any"); within a tenant, the order of eval_queue_tenant_lane_idx: priority, then
//              position within the batch (so batches interleave), then age. FOR UPDATE SKIP
//              LOCKED over each tenant's first rows of each lane, one statement; nothing for a
//              worker an operator drained (workers.drained_at, read in the same statement, so
//              every coordinator honours a drain at once)
//  CompleteAndLease
//              deletes the lease and stores the result only if the lease still exists (a late
//              result of a reclaimed lease is dropped, so a result is stored once), and leases
//              the worker's next evaluations, in one statement and one commit
//  Reclaim     leases past their deadline go back to the queue at their old position; an
//              evaluation that has used its attempts is finished as runtime_error (rule
//              worker_lost) instead
//
// Commits: a result is committed synchronously. A lease alone and a heartbeat are committed
// with synchronous_commit off: a database crash can forget the last few of them, which only
// puts the evaluation back in the queue (the worker's result is then dropped as stale and the
// evaluation runs again) or moves a deadline back by one heartbeat.
//
// Thread-safe: every method takes a pooled connection for its own duration.
#ifndef KFORGE_COORDINATOR_QUEUE_STORE_H_
#define KFORGE_COORDINATOR_QUEUE_STORE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/pg.h"
#include "coordinator/work_queue.h"
#include "kforge/v1/eval.pb.h"

namespace kforge {

struct CandidateInput {
  std::string source;
  std::string dialect;  // "kernelbench", "nvrtc", "cpp"
  std::string client_ref;
};

struct BatchSpec {
  std::string task_id;
  std::vector<CandidateInput> candidates;
  std::vector<std::string> gpu_types;  // "any" allowed
  int priority = 0;
  std::string job_id;                // empty: none
  std::string settings_json = "{}";  // engine settings for every evaluation
  std::string owner, tenant;         // the principal that submitted it
};

struct EnqueuedBatch {
  std::string batch_id;
  int evaluations = 0;
  std::map<std::string, int64_t> queued_per_type;  // GPU type -> evaluations queued
};

// Where a reader stands in a batch's results (FinishedSince). Every evaluation finished by a
// transaction older than `xmin` has been returned; `recent` holds the ones returned that were
// finished at or after it, with their transaction ids.
struct ResultCursor {
  uint64_t xmin = 0;
  std::map<int64_t, uint64_t> recent;
  int64_t delivered = 0;  // evaluations returned so far
};

struct StoredEvaluation {
  int64_t evaluation_id = 0;
  std::string candidate_id, task_id, batch_id, gpu_type, ran_on_gpu_type, worker_id;
  std::string client_ref, finished_at, result_json;
  int attempts = 0;
};

// Filters for Query; empty fields match everything.
struct EvaluationFilter {
  std::string task_id, job_id, candidate_id, gpu_type;
  std::vector<std::string> tenants;  // of the evaluations' batches; empty: every tenant
  std::string verdict;               // "ok", "incorrect", ...
  int limit = 100;
};

struct BatchProgress {
  std::string task_id;
  std::string tenant;  // the submitter's; "" for batches from before identities
  int total = 0;
  int done = 0;
};

struct ReclaimStats {
  int requeued = 0;
  int abandoned = 0;  // finished as worker_lost
  std::map<std::string, int64_t> requeued_per_type;
  std::set<std::string> abandoned_batches;
};

class QueueStore : public WorkQueue {
 public:
  explicit QueueStore(PgPool& pool) : pool_(pool) {}

  // NOT_FOUND for an unknown task; RESOURCE_EXHAUSTED when the batch would take the queue past
  // `max_queue_depth` items, or the queued evaluations of spec.tenant past
  // `max_tenant_queued` (0: no limit; checked in the same transaction, not serialised with
  // other enqueues, so concurrent batches may pass it by their own size).
  absl::StatusOr<EnqueuedBatch> Enqueue(const BatchSpec& spec, int64_t max_queue_depth,
                                        int64_t max_tenant_queued = 0);
  absl::StatusOr<BatchProgress> Progress(const std::string& batch_id);
  // Finished evaluations of a batch that `cursor` has not returned yet, in id order, and the
  // cursor moved past them. Results finish in any order and commit in another, so the cursor
  // follows the finishing transactions' ids against the reading snapshot's xmin (rows of a
  // transaction still running then show up in a later call), not the evaluation ids.
  absl::StatusOr<std::vector<StoredEvaluation>> FinishedSince(const std::string& batch_id,
                                                              ResultCursor& cursor);
  // The same for every batch of a job (WatchJob).
  absl::StatusOr<std::vector<StoredEvaluation>> JobFinishedSince(const std::string& job_id,
                                                                 ResultCursor& cursor);

  // Finished evaluations matching the filter, newest first.
  absl::StatusOr<std::vector<StoredEvaluation>> Query(const EvaluationFilter& filter);

  // The WorkQueue (work_queue.h), in PostgreSQL.
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
  absl::StatusOr<ReclaimStats> ReclaimExpired();
  // Workers that heartbeated within `window_s`, per GPU type.
  absl::StatusOr<std::map<std::string, int64_t>> LiveWorkers(double window_s);
  // Queued items per GPU type.
  absl::StatusOr<std::map<std::string, int64_t>> QueueDepth();
  absl::Status MarkWorker(const std::string& worker_id, const std::string& state) override;

 private:
  // FinishedSince over the evaluations whose `column` (batch_id or job_id) is `id`.
  absl::StatusOr<std::vector<StoredEvaluation>> FinishedWhere(const char* column,
                                                              const std::string& id,
                                                              ResultCursor& cursor);

  PgPool& pool_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_QUEUE_STORE_H_
