// gRPC adapter for kforge.v1.WorkerService: worker registration (the lease stream comes with
// the distributed-evaluation work).
//
// Thread-safety: called concurrently from gRPC's threads; PgStore is thread-safe.
#ifndef KFORGE_COORDINATOR_WORKER_SERVICE_H_
#define KFORGE_COORDINATOR_WORKER_SERVICE_H_

#include "coordinator/pg_store.h"
#include "kforge/v1/worker.grpc.pb.h"

namespace kforge {

struct WorkerTimings {
  double heartbeat_interval_s = 2;
  double lease_timeout_s = 15;
};

class WorkerServiceImpl final : public v1::WorkerService::Service {
 public:
  WorkerServiceImpl(PgStore& store, WorkerTimings timings) : store_(store), timings_(timings) {}

  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req,
                        v1::RegisterResponse* resp) override;

 private:
  PgStore& store_;
  const WorkerTimings timings_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_WORKER_SERVICE_H_
