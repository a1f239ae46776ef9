// gRPC adapter for kforge.v1.JobService: converts requests to PgStore calls and statuses to
// gRPC statuses. Holds no state of its own.
//
// Thread-safety: called concurrently from gRPC's threads; PgStore is thread-safe.
#ifndef KFORGE_COORDINATOR_JOB_SERVICE_H_
#define KFORGE_COORDINATOR_JOB_SERVICE_H_

#include "coordinator/notifier.h"
#include "coordinator/pg_store.h"
#include "coordinator/queue_store.h"
#include "kforge/v1/jobs.grpc.pb.h"

namespace kforge {

class JobServiceImpl final : public v1::JobService::Service {
 public:
  struct Limits {
    int64_t max_queue_depth = 100000;
    int max_candidates_per_batch = 1000;
    size_t max_candidate_bytes = 1 << 20;
    double poll_interval_s = 0.1;
  };
  JobServiceImpl(PgStore& store, QueueStore& queue, Notifier& notifier, Limits limits)
      : store_(store), queue_(queue), notifier_(notifier), limits_(limits) {}

  grpc::Status SubmitTask(grpc::ServerContext* ctx, const v1::SubmitTaskRequest* req,
                          v1::SubmitTaskResponse* resp) override;
  grpc::Status ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest* req,
                           v1::ListWorkersResponse* resp) override;
  // Queues the batch (or re-attaches to req.batch_id) and streams every finished evaluation
  // of it until all are done. The batch id is sent first, as initial metadata
  // "kforge-batch-id", so a client that loses the stream can call again with it.
  // Stored evaluations matching the query, newest first.
  grpc::Status QueryResults(grpc::ServerContext* ctx, const v1::ResultsQuery* req,
                            v1::ResultsResponse* resp) override;
  grpc::Status EvaluateBatch(grpc::ServerContext* ctx, const v1::EvaluateBatchRequest* req,
                             grpc::ServerWriter<v1::EvaluationRecord>* writer) override;

 private:
  PgStore& store_;
  QueueStore& queue_;
  Notifier& notifier_;
  const Limits limits_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_JOB_SERVICE_H_
