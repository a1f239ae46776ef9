#include "coordinator/worker_service.h"

#include <algorithm>
#include <set>
#include <thread>

#include "common/base/log.h"
#include "common/dialect.h"
#include "common/result_json.h"
#include "common/service.h"
#include "coordinator/result_validation.h"
#include "coordinator/task_validation.h"
#include "google/protobuf/util/json_util.h"
#include "kforge/v1/jobs.pb.h"
#include "prometheus/family.h"

namespace kforge {
namespace {

// The task's stored options (precision, tolerances, trials, policy, speedup clock) become
// engine settings.
void ApplyTaskOptions(const std::string& options_json, v1::EvalRequest* req) {
  v1::TaskOptions opts;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(options_json, &opts, parse).ok()) return;
  // fp16/bf16 tasks get KernelBench's 1e-2 unless the task sets its own tolerances; fp32 gets
  // the engine's defaults (which also follow the output dtype).
  bool low = opts.precision() == "fp16" || opts.precision() == "bf16";
  req->set_atol(opts.atol() > 0 ? opts.atol() : (low ? 1e-2 : 0));
  req->set_rtol(opts.rtol() > 0 ? opts.rtol() : (low ? 1e-2 : 0));
  req->set_correctness_trials(opts.correctness_trials());
  req->set_policy(opts.policy());
  req->set_speedup_clock(opts.speedup_clock());
}

}  // namespace

WorkerServiceImpl::WorkerServiceImpl(PgStore& store, QueueStore& queue, Notifier& notifier,
                                     const RpcAuth& auth, prometheus::Registry& metrics,
                                     WorkerTimings timings, AuditLog* audit)
    : store_(store),
      auth_(auth),
      audit_(audit),
      queue_(queue),
      notifier_(notifier),
      timings_(timings),
      results_(prometheus::BuildCounter()
                   .Name("kforge_evaluations_total")
                   .Help("Evaluations finished, by verdict and GPU type")
                   .Register(metrics)),
      refused_(prometheus::BuildCounter()
                   .Name("kforge_results_refused_total")
                   .Help("Malformed results refused (nothing stored), by GPU type")
                   .Register(metrics)),
      leases_(prometheus::BuildCounter()
                  .Name("kforge_leases_granted_total")
                  .Help("Leases handed to workers, by GPU type")
                  .Register(metrics)),
      queue_wait_(prometheus::BuildHistogram()
                      .Name("kforge_queue_wait_seconds")
                      .Help("Time from enqueue to lease, by GPU type")
                      .Register(metrics)) {}

grpc::Status WorkerServiceImpl::Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req,
                                         v1::RegisterResponse* resp) {
  auto principal = auth_.Check(*ctx, {Role::kWorker}, "register as a worker");
  if (!principal.ok()) {
    LogWarning("worker registration refused", {{"peer", ctx->peer()},
                                               {"error", std::string(principal.status().message())}});
    return ToGrpcStatus(principal.status());
  }
  const v1::WorkerFacts& f = req->facts();
  if (f.hostname().empty() || f.gpu_type().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "facts.hostname and facts.gpu_type are required");
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

// One worker's stream. Slots are counted here (the worker's slots plus the leases it asked to
// build ahead): `outstanding` leases were sent and not answered, `reserved` slots are being
// filled by a lease statement in flight.
class WorkerServiceImpl::Stream {
 public:
  // `held`: leases the worker still holds from an earlier stream; they fill slots until
  // answered or released, like those sent on this one.
  Stream(WorkerServiceImpl& service, grpc::ServerContext& ctx, WorkerStream* rpc,
         std::string worker_id, std::string gpu_type, int slots,
         const std::vector<std::string>& held)
      : service_(service),
        ctx_(ctx),
        rpc_(rpc),
        worker_id_(std::move(worker_id)),
        gpu_type_(std::move(gpu_type)),
        slots_(slots),
        waiter_(service.notifier_, gpu_type_),
        leases_granted_(service.leases_.Add({{"gpu_type", gpu_type_}})),
        queue_wait_(service.queue_wait_.Add({{"gpu_type", gpu_type_}},
                                            prometheus::Histogram::BucketBoundaries{
                                                0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600, 3600})) {
    absl::MutexLock lock(&mu_);
    outstanding_.insert(held.begin(), held.end());
  }

  // The handler thread: leases whenever slots are free and nothing else fills them, then
  // waits for new work of this type, for a freed slot, or for the poll interval.
  void Lease(grpc::ServerContext* ctx) {
    while (!ctx->IsCancelled()) {
      uint64_t seen = waiter_.generation();
      int free = Reserve();
      if (free < 0) break;  // the reader ended
      if (free > 0) {
        waiter_.Arm(free);
        auto leased = service_.queue_.Lease(Request(free));
        int granted = 0;
        if (!leased.ok()) {
          LogWarning("lease failed", {{"error", std::string(leased.status().message())}});
        } else {
          granted = static_cast<int>(leased->grants.size());
          Send(*leased);
        }
        Unreserve(free);
        if (granted == free) {
          waiter_.Disarm();
          continue;
        }
      }
      waiter_.Wait(seen, absl::Seconds(service_.timings_.poll_interval_s));
    }
  }

  // The reader thread: heartbeats, results (each stored together with the next leases),
  // releases, until the worker's side ends.
  void Read() {
    v1::WorkerMessage msg;
    while (rpc_->Read(&msg)) {
      if (msg.has_heartbeat()) {
        // Credentials are checked again at every heartbeat: a revoked or expired token ends
        // the stream within one heartbeat interval.
        if (auto who = service_.auth_.Identify(ctx_);
            !who.ok() && absl::IsUnauthenticated(who.status())) {
          CutOff(std::string(who.status().message()));
          break;
        }
        std::vector<std::string> ids(msg.heartbeat().lease_ids().begin(),
                                     msg.heartbeat().lease_ids().end());
        if (auto s = service_.queue_.Heartbeat(worker_id_, ids, service_.timings_.lease_timeout_s);
            !s.ok()) {
          LogWarning("heartbeat not recorded",
                     {{"worker_id", worker_id_}, {"error", std::string(s.message())}});
        }
        absl::MutexLock lock(&mu_);
        draining_ = msg.heartbeat().draining();
      } else if (msg.has_result()) {
        StoreResult(msg.result());
      } else if (msg.has_release()) {
        Release(msg.release().lease_id());
        {
          absl::MutexLock lock(&mu_);
          outstanding_.erase(msg.release().lease_id());
        }
        waiter_.Wake();
      }
    }
    {
      absl::MutexLock lock(&mu_);
      reader_done_ = true;
    }
    waiter_.Wake();
  }

  // Set when the worker's credentials stopped being valid during the stream.
  std::optional<grpc::Status> cut_off() {
    absl::MutexLock lock(&mu_);
    return cut_off_;
  }

  // True when the worker said it was draining and nothing it was sent is unanswered.
  bool Drained() {
    absl::MutexLock lock(&mu_);
    return draining_ && outstanding_.empty();
  }

 private:
  LeaseRequest Request(int n) const {
    return {worker_id_, gpu_type_, n, service_.timings_.lease_timeout_s};
  }

  // Takes the free slots for a lease statement: none while draining, -1 once the reader ended.
  int Reserve() {
    absl::MutexLock lock(&mu_);
    if (reader_done_) return -1;
    int free = draining_ ? 0 : slots_ - static_cast<int>(outstanding_.size()) - reserved_;
    free = std::max(free, 0);
    reserved_ += free;
    return free;
  }
  void Unreserve(int n) {
    absl::MutexLock lock(&mu_);
    reserved_ -= n;
  }

  void StoreResult(const v1::WorkerMessage::Result& r) {
    {
      absl::MutexLock lock(&mu_);
      outstanding_.erase(r.lease_id());
    }
    if (absl::Status valid = ValidateResult(r.result()); !valid.ok()) {
      RefuseResult(r.lease_id(), std::string(valid.message()));
      return;
    }
    int free = Reserve();
    LeaseRequest next = Request(std::max(free, 0));
    // The database may be restarting: retry for a while before leaving the lease to expire
    // (then the evaluation runs again; nothing is lost either way).
    auto done = service_.queue_.CompleteAndLease(r.lease_id(), r.result(), next);
    for (int attempt = 0; !done.ok() && IsRetryablePgError(done.status()) && attempt < 40;
         ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      done = service_.queue_.CompleteAndLease(r.lease_id(), r.result(), next);
    }
    int granted = 0;
    if (!done.ok()) {
      // The lease stays; the worker re-sends after reconnecting, or it expires.
      LogError("result not stored",
               {{"lease_id", r.lease_id()}, {"error", std::string(done.status().message())}});
    } else {
      granted = static_cast<int>(done->next.grants.size());
      Send(done->next);
      const char* verdict = VerdictName(r.result().verdict());
      service_.results_.Add({{"verdict", verdict}, {"gpu_type", gpu_type_}}).Increment();
      LogInfo(done->stored ? "result stored" : "stale result dropped",
              {{"lease_id", r.lease_id()}, {"verdict", verdict}});
      if (done->stored) service_.notifier_.BatchChanged(done->batch_id);
    }
    if (free > 0) Unreserve(free);
    // A slot this did not fill is the handler's to watch (its next lease arms the waiter).
    if (granted < free) waiter_.Wake();
  }

  // The worker's token is no longer valid: its leases go back to the queue (attempts not
  // counted: the evaluations did nothing wrong) and the stream ends UNAUTHENTICATED.
  void CutOff(const std::string& why) {
    LogWarning("worker cut off", {{"worker_id", worker_id_}, {"error", why}});
    Principal coordinator{"", "coordinator", "system", {}};
    Audit(service_.audit_, coordinator, "cut_off_worker", worker_id_, {{"reason", why}});
    auto released = service_.queue_.ReleaseWorkerLeases(worker_id_);
    if (!released.ok()) {
      LogError("leases of a cut-off worker not released",
               {{"worker_id", worker_id_}, {"error", std::string(released.status().message())}});
    } else {
      for (const auto& [type, n] : *released) service_.notifier_.WorkAdded(type, n);
    }
    absl::MutexLock lock(&mu_);
    cut_off_ = grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "worker credentials no longer valid: " + why);
    outstanding_.clear();
  }

  // Stores nothing of a malformed result: the lease goes back to the queue with its attempt
  // counted (a worker that keeps sending garbage uses the evaluation's attempts up), and the
  // worker is told why.
  void RefuseResult(const std::string& lease_id, const std::string& reason) {
    LogWarning("result refused",
               {{"lease_id", lease_id}, {"worker_id", worker_id_}, {"reason", reason}});
    service_.refused_.Add({{"gpu_type", gpu_type_}}).Increment();
    Release(lease_id, /*count_attempt=*/true);
    v1::CoordinatorMessage out;
    out.mutable_result_refused()->set_lease_id(lease_id);
    out.mutable_result_refused()->set_reason(reason);
    {
      absl::MutexLock lock(&write_mu_);
      rpc_->Write(out);
    }
    waiter_.Wake();  // the freed slot is the handler's to fill
  }

  void Release(const std::string& lease_id, bool count_attempt = false) {
    auto type = service_.queue_.Release(lease_id, worker_id_, count_attempt);
    if (!type.ok()) {
      LogWarning("release failed",
                 {{"lease_id", lease_id}, {"error", std::string(type.status().message())}});
    } else if (!type->empty()) {
      service_.notifier_.WorkAdded(*type, 1);
    }
  }

  // Writes the leases to the worker. Leases it can no longer receive go back to the queue.
  void Send(const Leased& leased) {
    for (const auto& [type, n] : leased.passed_over) service_.notifier_.WorkAdded(type, n);
    for (size_t i = 0; i < leased.grants.size(); ++i) {
      const LeaseGrant& g = leased.grants[i];
      v1::CoordinatorMessage out;
      v1::Lease* l = out.mutable_lease();
      l->set_lease_id(g.lease_id);
      l->set_evaluation_id(std::to_string(g.evaluation_id));
      l->set_attempt(static_cast<uint32_t>(g.attempt));
      l->set_deadline_s(service_.timings_.lease_timeout_s);
      v1::EvalRequest* req = l->mutable_request();
      req->set_task_source(g.task_source);
      req->set_candidate_source(g.candidate_source);
      req->set_task_name(g.task_name);
      v1::Dialect dialect = v1::DIALECT_UNSPECIFIED;
      ParseDialect(g.dialect, &dialect);
      req->set_dialect(dialect);
      ApplyTaskOptions(g.task_options_json, req);
      {
        // Counted before the write, so that a result racing back finds it.
        absl::MutexLock lock(&mu_);
        outstanding_.insert(g.lease_id);
      }
      leases_granted_.Increment();
      queue_wait_.Observe(g.waited_s);
      LogInfo("lease granted", {{"lease_id", g.lease_id},
                                {"evaluation_id", std::to_string(g.evaluation_id)},
                                {"worker_id", worker_id_}});
      bool written;
      {
        absl::MutexLock lock(&write_mu_);
        written = rpc_->Write(out);
      }
      if (!written) {
        // The worker is gone: hand back what it never received (this one and the rest).
        for (size_t j = i; j < leased.grants.size(); ++j) {
          Release(leased.grants[j].lease_id);
          absl::MutexLock lock(&mu_);
          outstanding_.erase(leased.grants[j].lease_id);
        }
        return;
      }
    }
  }

  WorkerServiceImpl& service_;
  grpc::ServerContext& ctx_;
  WorkerStream* const rpc_;
  const std::string worker_id_;
  const std::string gpu_type_;
  const int slots_;
  Notifier::WorkWaiter waiter_;
  prometheus::Counter& leases_granted_;
  prometheus::Histogram& queue_wait_;
  absl::Mutex write_mu_;  // one Write at a time; reads run beside it
  absl::Mutex mu_;
  std::set<std::string> outstanding_ ABSL_GUARDED_BY(mu_);
  int reserved_ ABSL_GUARDED_BY(mu_) = 0;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> cut_off_ ABSL_GUARDED_BY(mu_);
};

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
  // Leases beyond the slots wait on the worker while it builds them on its CPUs.
  const int prefetch =
      static_cast<int>(std::min<uint32_t>(first.hello().prefetch(), 2u * static_cast<uint32_t>(worker->slots)));
  std::vector<std::string> held(first.hello().held_lease_ids().begin(),
                                first.hello().held_lease_ids().end());
  Stream stream(*this, *ctx, rpc, worker_id, worker->gpu_type, worker->slots + prefetch, held);
  std::thread reader([&] { stream.Read(); });
  stream.Lease(ctx);
  if (std::optional<grpc::Status> cut = stream.cut_off()) {
    reader.join();  // it ended by itself
    return *cut;
  }
  ctx->TryCancel();
  reader.join();
  if (stream.Drained()) {
    // A worker that drained and left is listed no more.
    (void)queue_.MarkWorker(worker_id, "gone");
    LogInfo("worker drained and left", {{"worker_id", worker_id}});
  }
  return grpc::Status::OK;
}

}  // namespace kforge
