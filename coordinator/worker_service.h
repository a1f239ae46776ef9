// gRPC adapter for kforge.v1.WorkerService: registration, and one bidirectional stream per
// worker. On the stream the worker says hello, then sends heartbeats (held leases, draining),
// results and releases; the coordinator sends leases whenever the worker has free slots
// (slots minus leases outstanding on this stream) and the queue has work of its GPU type.
// Only callers with the worker role may register or connect, a stream only for the worker
// registered with the caller's token, and the token is checked again at every heartbeat: a
// revoked worker's stream ends UNAUTHENTICATED and its leases go back to the queue.
// A result is stored together with the worker's next lease (QueueStore::CompleteAndLease), so
// a busy worker costs one statement and one commit per evaluation.
//
// Threading: per stream, the gRPC handler thread leases for slots that nothing else fills
// and otherwise waits on the Notifier (new work of its type) or polls every poll_interval_s;
// a second thread reads the worker's messages and stores results. Both write leases, one at a
// time. Leases outlive the stream in PostgreSQL: a worker that reconnects can still deliver
// results for them; otherwise they expire and are reclaimed.
#ifndef KFORGE_COORDINATOR_WORKER_SERVICE_H_
#define KFORGE_COORDINATOR_WORKER_SERVICE_H_

#include "coordinator/audit.h"
#include "coordinator/notifier.h"
#include "coordinator/pg_store.h"
#include "coordinator/queue_store.h"
#include "coordinator/rpc_auth.h"
#include "kforge/v1/worker.grpc.pb.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
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
  WorkerServiceImpl(PgStore& store, QueueStore& queue, Notifier& notifier, const RpcAuth& auth,
                    prometheus::Registry& metrics, WorkerTimings timings,
                    AuditLog* audit = nullptr);

  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req,
                        v1::RegisterResponse* resp) override;
  using WorkerStream = grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>;
  grpc::Status Connect(grpc::ServerContext* ctx, WorkerStream* stream) override;

 private:
  class Stream;

  PgStore& store_;
  const RpcAuth& auth_;
  AuditLog* const audit_;
  QueueStore& queue_;
  Notifier& notifier_;
  const WorkerTimings timings_;
  prometheus::Family<prometheus::Counter>& results_;
  prometheus::Family<prometheus::Counter>& refused_;
  prometheus::Family<prometheus::Counter>& leases_;
  prometheus::Family<prometheus::Histogram>& queue_wait_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_WORKER_SERVICE_H_
