// gRPC adapter for kforge.v1.JobService: converts requests to PgStore calls and statuses to
// gRPC statuses. Holds no state of its own.
//
// Thread-safety: called concurrently from gRPC's threads; PgStore is thread-safe.
#ifndef KFORGE_COORDINATOR_JOB_SERVICE_H_
#define KFORGE_COORDINATOR_JOB_SERVICE_H_

#include "coordinator/pg_store.h"
#include "kforge/v1/jobs.grpc.pb.h"

namespace kforge {

class JobServiceImpl final : public v1::JobService::Service {
 public:
  explicit JobServiceImpl(PgStore& store) : store_(store) {}

  grpc::Status SubmitTask(grpc::ServerContext* ctx, const v1::SubmitTaskRequest* req,
                          v1::SubmitTaskResponse* resp) override;
  grpc::Status ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest* req,
                           v1::ListWorkersResponse* resp) override;

 private:
  PgStore& store_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_JOB_SERVICE_H_
