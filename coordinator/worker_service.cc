#include "coordinator/worker_service.h"

#include <optional>
#include <thread>
#include <utility>

#include "common/base/log.h"
#include "common/service.h"
#include "coordinator/task_validation.h"
#include "google/protobuf/util/json_util.h"

namespace kforge {
namespace {

class StreamSender : public WorkerSender {
 public:
  explicit StreamSender(WorkerServiceImpl::WorkerStream& rpc) : rpc_(rpc) {}
  bool Send(const v1::CoordinatorMessage& message) override { return rpc_.Write(message); }

 private:
  WorkerServiceImpl::WorkerStream& rpc_;
};

}  // namespace

WorkerServiceImpl::WorkerServiceImpl(PgStore& store, WorkQueue& queue, Notifier& notifier,
                                     const RpcAuth& auth, prometheus::Registry& metrics,
                                     WorkerTimings timings, AuditLog* audit)
    : store_(store),
      auth_(auth),
      audit_(audit),
      queue_(queue),
      notifier_(notifier),
      timings_(timings),
      metrics_(metrics) {}

grpc::Status WorkerServiceImpl::Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req,
                                         v1::RegisterResponse* resp) {
  auto principal = auth_.Check(*ctx, {Role::kWorker}, "register as a worker");
  if (!principal.ok()) {
    LogWarning("worker registration refused", {{"peer", ctx->peer()},
                                               {"error", std::string(principal.status().message())}});
    return ToGrpcStatus(principal.status());
  }
  const v1::WorkerFacts& f = req->facts();
  if (absl::Status s = ValidateWorkerNames(f.gpu_type(), f.hostname()); !s.ok()) {
    return ToGrpcStatus(s);
  }
  if (f.slots() == 0 || f.slots() > 64) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "facts.slots must be 1..64");
  }
  std::string facts_json;
  (void)google::protobuf::util::MessageToJsonString(f, &facts_json);
  auto id = store_.RegisterWorker(f.hostname(), f.gpu_type(), static_cast<int>(f.slots()),
                                  facts_json, principal->token_id);
  if (!id.ok()) return ToGrpcStatus(id.status());
  resp->set_worker_id(*id);
  Audit(audit_, *principal, "register_worker", *id,
        {{"hostname", f.hostname()}, {"gpu_type", f.gpu_type()}, {"slots", f.slots()}});
  resp->set_heartbeat_interval_s(timings_.heartbeat_interval_s);
  resp->set_lease_timeout_s(timings_.lease_timeout_s);
  LogInfo("worker registered", {{"worker_id", *id},
                                {"hostname", f.hostname()},
                                {"gpu_type", f.gpu_type()},
                                {"identity", principal->name}});
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Connect(grpc::ServerContext* ctx, WorkerStream* rpc) {
  auto principal = auth_.Check(*ctx, {Role::kWorker}, "hold a worker stream");
  if (!principal.ok()) {
    LogWarning("worker stream refused", {{"peer", ctx->peer()},
                                         {"error", std::string(principal.status().message())}});
    return ToGrpcStatus(principal.status());
  }
  v1::WorkerMessage first;
  if (!rpc->Read(&first) || !first.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message on a worker stream must be hello");
  }
  const std::string worker_id = first.hello().worker_id();
  if (absl::Status s = ValidateUuid(worker_id, "worker_id"); !s.ok()) return ToGrpcStatus(s);
  auto worker = store_.GetWorker(worker_id);
  if (!worker.ok()) return ToGrpcStatus(worker.status());
  if (auth_.enabled() && worker->token_id != principal->token_id) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "worker " + worker_id + " registered with another identity than " +
                            principal->name + "'s token");
  }
  if (!IsGpuTypeName(worker->gpu_type)) {
    // Registered before session 29's limits: its type would become a metrics label and a
    // pool name of any size. It registers again.
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "worker " + worker_id +
                            " was registered with a GPU type that is not a valid name "
                            "(1-64 of [A-Za-z0-9._-]); register again");
  }
  DispatchSettings settings;
  settings.worker_id = worker_id;
  settings.gpu_type = worker->gpu_type;
  // Leases beyond the slots wait on the worker while it builds them on its CPUs.
  settings.capacity = WorkerCapacity(worker->slots, first.hello().prefetch());
  settings.held.assign(first.hello().held_lease_ids().begin(),
                       first.hello().held_lease_ids().end());
  settings.lease_timeout_s = timings_.lease_timeout_s;
  settings.poll_interval_s = timings_.poll_interval_s;
  StreamSender sender(*rpc);
  LeaseDispatcher dispatcher(
      queue_, notifier_, sender, metrics_, std::move(settings),
      [&] { return auth_.Identify(*ctx).status(); }, audit_);
  std::thread reader([&] {
    v1::WorkerMessage msg;
    while (rpc->Read(&msg) && dispatcher.Handle(msg)) {
    }
    dispatcher.ReaderEnded();
  });
  dispatcher.RunLeasing([ctx] { return ctx->IsCancelled(); });
  if (std::optional<absl::Status> cut = dispatcher.cut_off()) {
    // Cut off at a message, the reader ended by itself; cut off before leasing, it may wait
    // on a worker that says nothing, which then sees CANCELLED (the log says why).
    if (!dispatcher.reader_done()) ctx->TryCancel();
    reader.join();
    return ToGrpcStatus(*cut);
  }
  ctx->TryCancel();
  reader.join();
  dispatcher.Finish();
  return grpc::Status::OK;
}

}  // namespace kforge
