// gRPC adapter for kforge.v1.JobService: converts requests to PgStore calls and statuses to
// gRPC statuses. Holds no state of its own. Every RPC first asks RpcAuth who calls and whether
// its roles allow the call (docs/security.md, "Roles"); jobs and batches record their
// principal, and only it (or an operator) may cancel a job.
//
// Thread-safety: called concurrently from gRPC's threads; PgStore is thread-safe.
#ifndef KFORGE_COORDINATOR_JOB_SERVICE_H_
#define KFORGE_COORDINATOR_JOB_SERVICE_H_

#include "coordinator/audit.h"
#include "coordinator/gateway_client.h"
#include "coordinator/job_store.h"
#include "coordinator/notifier.h"
#include "coordinator/pg_store.h"
#include "coordinator/queue_store.h"
#include "coordinator/rpc_auth.h"
#include "coordinator/task_syntax.h"
#include "kforge/v1/jobs.grpc.pb.h"

namespace kforge {

class JobServiceImpl final : public v1::JobService::Service {
 public:
  struct Limits {
    int64_t max_queue_depth = 100000;
    int max_candidates_per_batch = 1000;
    size_t max_candidate_bytes = 1 << 20;
    uint32_t max_priority = 1000000;
    // Per tenant (0: no limit): jobs queued or running, evaluations queued.
    int max_tenant_active_jobs = 0;
    int64_t max_tenant_queued = 0;
    double poll_interval_s = 0.1;
    // GPU types work may be queued for besides "any" and the types workers ever registered
    // with: pools that exist but may have no worker now (scaled to zero, not started yet).
    std::vector<std::string> gpu_pools;
  };
  // `jobs` null: the optimization-job RPCs answer UNIMPLEMENTED. `syntax` null: tasks are
  // checked by pattern only (task_validation.h), not compiled.
  // `audit` null: no audit trail. `gateway` null: a job's llm settings are not checked with the
  // gateway when it is submitted (only when its rounds call it).
  JobServiceImpl(PgStore& store, QueueStore& queue, Notifier& notifier, const RpcAuth& auth,
                 Limits limits, JobStore* jobs = nullptr,
                 const PythonSyntaxChecker* syntax = nullptr, AuditLog* audit = nullptr,
                 GatewayClient* gateway = nullptr)
      : store_(store),
        auth_(auth),
        audit_(audit),
        queue_(queue),
        notifier_(notifier),
        limits_(std::move(limits)),
        jobs_(jobs),
        syntax_(syntax),
        gateway_(gateway) {}

  grpc::Status SubmitTask(grpc::ServerContext* ctx, const v1::SubmitTaskRequest* req,
                          v1::SubmitTaskResponse* resp) override;
  grpc::Status ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest* req,
                           v1::ListWorkersResponse* resp) override;
  // Operator or admin; audited.
  grpc::Status DrainWorker(grpc::ServerContext* ctx, const v1::DrainWorkerRequest* req,
                           v1::DrainWorkerResponse* resp) override;
  grpc::Status UndrainWorker(grpc::ServerContext* ctx, const v1::DrainWorkerRequest* req,
                             v1::DrainWorkerResponse* resp) override;
  // Queues the batch (or re-attaches to req.batch_id) and streams every finished evaluation
  // of it until all are done. The batch id is sent first, as initial metadata
  // "kforge-batch-id", so a client that loses the stream can call again with it.
  // Stored evaluations matching the query, newest first.
  grpc::Status QueryResults(grpc::ServerContext* ctx, const v1::ResultsQuery* req,
                            v1::ResultsResponse* resp) override;
  grpc::Status EvaluateBatch(grpc::ServerContext* ctx, const v1::EvaluateBatchRequest* req,
                             grpc::ServerWriter<v1::EvaluationRecord>* writer) override;

  // Optimization jobs (job_rpcs.cc). The coordinator's JobRunner runs them; these only read
  // and write PostgreSQL, so any coordinator can answer for any job.
  grpc::Status SubmitJob(grpc::ServerContext* ctx, const v1::SubmitJobRequest* req,
                         v1::SubmitJobResponse* resp) override;
  grpc::Status GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                      v1::Job* resp) override;
  grpc::Status ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                        v1::ListJobsResponse* resp) override;
  grpc::Status CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req,
                         v1::CancelJobResponse* resp) override;
  // Replays the job's events from the start, then follows it until it ends.
  grpc::Status WatchJob(grpc::ServerContext* ctx, const v1::WatchJobRequest* req,
                        grpc::ServerWriter<v1::JobEvent>* writer) override;
  grpc::Status GetBestCandidates(grpc::ServerContext* ctx, const v1::BestCandidatesRequest* req,
                                 v1::BestCandidatesResponse* resp) override;
  grpc::Status GetJobTrajectory(grpc::ServerContext* ctx, const v1::JobTrajectoryRequest* req,
                                v1::JobTrajectoryResponse* resp) override;
  grpc::Status ExportRollouts(grpc::ServerContext* ctx, const v1::ExportRolloutsRequest* req,
                              grpc::ServerWriter<v1::Rollout>* writer) override;

 private:
  grpc::Status FillJob(const JobRow& row, v1::Job* out);
  // INVALID_ARGUMENT naming the first type no pool serves (see Limits::gpu_pools).
  grpc::Status CheckGpuTypes(const std::vector<std::string>& types);
  // OK, or the gateway's refusal of a job's llm settings (only when they name a base_url: the
  // gateway keeps the allow-list of endpoints); UNAVAILABLE when the gateway cannot answer.
  grpc::Status CheckLlmEndpoint(const v1::LlmSettings& llm);
  grpc::Status SetDrained(const grpc::ServerContext& ctx, const std::string& worker_id,
                          bool drained, v1::DrainWorkerResponse* resp);

  PgStore& store_;
  const RpcAuth& auth_;
  AuditLog* const audit_;
  QueueStore& queue_;
  Notifier& notifier_;
  const Limits limits_;
  JobStore* const jobs_;
  const PythonSyntaxChecker* const syntax_;
  GatewayClient* const gateway_;
};

// A stored evaluation as the API returns it.
void ToRecord(const StoredEvaluation& e, v1::EvaluationRecord* rec);

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_JOB_SERVICE_H_
