// The durable evaluation queue in PostgreSQL: batches in, leases out, results back exactly
// once, expired leases reclaimed. All state lives in the database, so any number of
// coordinators (or a restarted one) see the same queue.
//
//  Enqueue     one transaction: batch row, candidates (content-addressed), one evaluation per
//              candidate x GPU type, one queue row each
//  Lease       FOR UPDATE SKIP LOCKED over the queue rows a worker's GPU type may take (its
//              own type and "any"), ordered by priority, then position within the batch (so
//              batches interleave), then age
//  Complete    deletes the lease and stores the result only if the lease still exists: a
//              late result of a reclaimed lease is dropped, so a result is stored once
//  Reclaim     leases past their deadline go back to the queue; an evaluation that has used
//              its attempts is finished as runtime_error (rule worker_lost) instead
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
  std::string job_id;                  // empty: none
  std::string settings_json = "{}";    // engine settings for every evaluation
};

struct EnqueuedBatch {
  std::string batch_id;
  int evaluations = 0;
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

struct StoredEvaluation {
  int64_t evaluation_id = 0;
  std::string candidate_id, task_id, batch_id, gpu_type, ran_on_gpu_type, worker_id;
  std::string client_ref, finished_at, result_json;
  int attempts = 0;
};

// Filters for Query; empty fields match everything.
struct EvaluationFilter {
  std::string task_id, job_id, candidate_id, gpu_type;
  std::string verdict;  // "ok", "incorrect", ...
  int limit = 100;
};

struct BatchProgress {
  std::string task_id;
  int total = 0;
  int done = 0;
};

struct ReclaimStats {
  int requeued = 0;
  int abandoned = 0;  // finished as worker_lost
};

class QueueStore {
 public:
  explicit QueueStore(PgPool& pool) : pool_(pool) {}

  // NOT_FOUND for an unknown task; RESOURCE_EXHAUSTED when the queue already holds
  // `max_queue_depth` items or more.
  absl::StatusOr<EnqueuedBatch> Enqueue(const BatchSpec& spec, int64_t max_queue_depth);
  absl::StatusOr<BatchProgress> Progress(const std::string& batch_id);
  // Finished evaluations of a batch not in `delivered`, in id order. (Results finish in any
  // order, so a cursor on the id would skip some.)
  absl::StatusOr<std::vector<StoredEvaluation>> FinishedExcept(const std::string& batch_id,
                                                               const std::set<int64_t>& delivered);

  // Finished evaluations matching the filter, newest first.
  absl::StatusOr<std::vector<StoredEvaluation>> Query(const EvaluationFilter& filter);

  absl::StatusOr<std::vector<LeaseGrant>> Lease(const std::string& worker_id,
                                                const std::string& gpu_type, int max_leases,
                                                double lease_timeout_s);
  // Extends the deadlines of the worker's listed leases and records its heartbeat.
  absl::Status Heartbeat(const std::string& worker_id, const std::vector<std::string>& lease_ids,
                         double lease_timeout_s);
  // True when stored; false when the lease no longer exists (reclaimed, already completed).
  absl::StatusOr<bool> Complete(const std::string& lease_id, const std::string& worker_id,
                                const v1::EvalResult& result);
  // Hands an unrun lease back (a draining worker); the attempt is not counted.
  absl::Status Release(const std::string& lease_id, const std::string& worker_id);
  absl::StatusOr<ReclaimStats> ReclaimExpired();
  // Workers that heartbeated within `window_s`, per GPU type.
  absl::StatusOr<std::map<std::string, int64_t>> LiveWorkers(double window_s);
  // Queued items per GPU type.
  absl::StatusOr<std::map<std::string, int64_t>> QueueDepth();
  absl::Status MarkWorker(const std::string& worker_id, const std::string& state);

 private:
  PgPool& pool_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_QUEUE_STORE_H_
