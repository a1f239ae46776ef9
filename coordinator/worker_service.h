// gRPC adapter for kforge.v1.WorkerService: registration, and one bidirectional stream per
// worker. Only callers with the worker role may register or connect, a stream only for the
// worker registered with the caller's token. On the stream the worker says hello (its id, the
// prefetch it asks for, the leases it still holds), then sends heartbeats, results and
// releases; what to do with them, and which leases to send, is the LeaseDispatcher's
// (lease_dispatcher.h): this file only checks identities, reads and writes the stream.
//
// Threading: per stream, the gRPC handler thread runs the dispatcher's leasing loop and a
// second thread reads the worker's messages into it. Leases outlive the stream in PostgreSQL:
// a worker that reconnects can still deliver results for them; otherwise they expire and are
// reclaimed.
#ifndef KFORGE_COORDINATOR_WORKER_SERVICE_H_
#define KFORGE_COORDINATOR_WORKER_SERVICE_H_

#include "coordinator/audit.h"
#include "coordinator/lease_dispatcher.h"
#include "coordinator/notifier.h"
#include "coordinator/pg_store.h"
#include "coordinator/work_queue.h"
#include "coordinator/rpc_auth.h"
#include "kforge/v1/worker.grpc.pb.h"
#include "prometheus/registry.h"

namespace kforge {

struct WorkerTimings {
  double heartbeat_interval_s = 2;
  double lease_timeout_s = 15;
  // How often an idle stream looks at the queue by itself. Work queued by this process wakes
  // it at once; polling only finds work that another coordinator queued.
  double poll_interval_s = 1;
};

class WorkerServiceImpl final : public v1::WorkerService::Service {
 public:
  // `audit` null: registrations and cut-offs are not audited.
  WorkerServiceImpl(PgStore& store, WorkQueue& queue, Notifier& notifier, const RpcAuth& auth,
                    prometheus::Registry& metrics, WorkerTimings timings,
                    AuditLog* audit = nullptr);

  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req,
                        v1::RegisterResponse* resp) override;
  using WorkerStream = grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>;
  grpc::Status Connect(grpc::ServerContext* ctx, WorkerStream* stream) override;

 private:
  PgStore& store_;
  const RpcAuth& auth_;
  AuditLog* const audit_;
  WorkQueue& queue_;
  Notifier& notifier_;
  const WorkerTimings timings_;
  DispatchMetrics metrics_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_WORKER_SERVICE_H_
