#include "coordinator/worker_service.h"

#include <set>
#include <thread>

#include "common/base/log.h"
#include "common/dialect.h"
#include "common/result_json.h"
#include "common/service.h"
#include "google/protobuf/util/json_util.h"
#include "kforge/v1/jobs.pb.h"
#include "prometheus/family.h"

namespace kforge {
namespace {

// The task's stored options (precision, tolerances, trials) become engine settings.
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
}

}  // namespace

WorkerServiceImpl::WorkerServiceImpl(PgStore& store, QueueStore& queue, Notifier& notifier,
                                     prometheus::Registry& metrics, WorkerTimings timings)
    : store_(store),
      queue_(queue),
      notifier_(notifier),
      timings_(timings),
      results_(prometheus::BuildCounter()
                   .Name("kforge_evaluations_total")
                   .Help("Evaluations finished, by verdict and GPU type")
                   .Register(metrics)),
      leases_(prometheus::BuildCounter()
                  .Name("kforge_leases_granted_total")
                  .Help("Leases handed to workers, by GPU type")
                  .Register(metrics)),
      queue_wait_(prometheus::BuildHistogram()
                      .Name("kforge_queue_wait_seconds")
                      .Help("Time from enqueue to lease, by GPU type")
                      .Register(metrics)) {}

grpc::Status WorkerServiceImpl::Register(grpc::ServerContext*, const v1::RegisterRequest* req,
                                         v1::RegisterResponse* resp) {
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
                                  facts_json);
  if (!id.ok()) return ToGrpcStatus(id.status());
  resp->set_worker_id(*id);
  resp->set_heartbeat_interval_s(timings_.heartbeat_interval_s);
  resp->set_lease_timeout_s(timings_.lease_timeout_s);
  LogInfo("worker registered",
          {{"worker_id", *id}, {"hostname", f.hostname()}, {"gpu_type", f.gpu_type()}});
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Connect(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::CoordinatorMessage, v1::WorkerMessage>* stream) {
  v1::WorkerMessage first;
  if (!stream->Read(&first) || !first.has_hello()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first message on a worker stream must be hello");
  }
  const std::string worker_id = first.hello().worker_id();
  auto worker = store_.GetWorker(worker_id);
  if (!worker.ok()) return ToGrpcStatus(worker.status());
  const std::string gpu_type = worker->gpu_type;
  const int slots = worker->slots;

  absl::Mutex mu;
  std::set<std::string> outstanding;  // leases sent on this stream, not yet answered
  bool draining = false;
  bool reader_done = false;

  std::thread reader([&] {
    v1::WorkerMessage msg;
    while (stream->Read(&msg)) {
      if (msg.has_heartbeat()) {
        std::vector<std::string> ids(msg.heartbeat().lease_ids().begin(),
                                     msg.heartbeat().lease_ids().end());
        if (auto s = queue_.Heartbeat(worker_id, ids, timings_.lease_timeout_s); !s.ok()) {
          LogWarning("heartbeat not recorded", {{"worker_id", worker_id},
                                                {"error", std::string(s.message())}});
        }
        absl::MutexLock lock(&mu);
        draining = msg.heartbeat().draining();
      } else if (msg.has_result()) {
        const auto& r = msg.result();
        {
          // Free the slot before waking anyone, so this stream's own loop sees it.
          absl::MutexLock lock(&mu);
          outstanding.erase(r.lease_id());
        }
        // The database may be restarting: retry for a while before leaving the lease to expire
        // (then the evaluation runs again; nothing is lost either way).
        auto stored = queue_.Complete(r.lease_id(), worker_id, r.result());
        for (int attempt = 0; !stored.ok() && IsRetryablePgError(stored.status()) && attempt < 40;
             ++attempt) {
          std::this_thread::sleep_for(std::chrono::milliseconds(250));
          stored = queue_.Complete(r.lease_id(), worker_id, r.result());
        }
        if (!stored.ok()) {
          // The lease stays; the worker re-sends after reconnecting, or it expires.
          LogError("result not stored", {{"lease_id", r.lease_id()},
                                         {"error", std::string(stored.status().message())}});
        } else {
          results_.Add({{"verdict", VerdictName(r.result().verdict())}, {"gpu_type", gpu_type}})
              .Increment();
          LogInfo(*stored ? "result stored" : "stale result dropped",
                  {{"lease_id", r.lease_id()}, {"verdict", VerdictName(r.result().verdict())}});
          notifier_.Notify();
        }
      } else if (msg.has_release()) {
        (void)queue_.Release(msg.release().lease_id(), worker_id);
        {
          absl::MutexLock lock(&mu);
          outstanding.erase(msg.release().lease_id());
        }
        notifier_.Notify();
      }
    }
    absl::MutexLock lock(&mu);
    reader_done = true;
  });

  while (!ctx->IsCancelled()) {
    uint64_t seen = notifier_.generation();
    int free = 0;
    {
      absl::MutexLock lock(&mu);
      if (reader_done) break;
      free = draining ? 0 : slots - static_cast<int>(outstanding.size());
    }
    if (free > 0) {
      auto grants = queue_.Lease(worker_id, gpu_type, free, timings_.lease_timeout_s);
      if (!grants.ok()) {
        LogWarning("lease failed", {{"error", std::string(grants.status().message())}});
      } else {
        for (const LeaseGrant& g : *grants) {
          v1::CoordinatorMessage out;
          v1::Lease* l = out.mutable_lease();
          l->set_lease_id(g.lease_id);
          l->set_evaluation_id(std::to_string(g.evaluation_id));
          l->set_attempt(static_cast<uint32_t>(g.attempt));
          l->set_deadline_s(timings_.lease_timeout_s);
          v1::EvalRequest* req = l->mutable_request();
          req->set_task_source(g.task_source);
          req->set_candidate_source(g.candidate_source);
          req->set_task_name(g.task_name);
          v1::Dialect dialect = v1::DIALECT_UNSPECIFIED;
          ParseDialect(g.dialect, &dialect);
          req->set_dialect(dialect);
          ApplyTaskOptions(g.task_options_json, req);
          {
            absl::MutexLock lock(&mu);
            outstanding.insert(g.lease_id);
          }
          leases_.Add({{"gpu_type", gpu_type}}).Increment();
          queue_wait_
              .Add({{"gpu_type", gpu_type}},
                   prometheus::Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120,
                                                           600, 3600})
              .Observe(g.waited_s);
          LogInfo("lease granted", {{"lease_id", g.lease_id},
                                    {"evaluation_id", std::to_string(g.evaluation_id)},
                                    {"worker_id", worker_id}});
          if (!stream->Write(out)) {
            // The worker is gone: hand back what it never received (this one and the rest).
            bool unsent = false;
            for (const LeaseGrant& back : *grants) {
              unsent = unsent || back.lease_id == g.lease_id;
              if (unsent) (void)queue_.Release(back.lease_id, worker_id);
            }
            break;
          }
        }
        if (!grants->empty()) continue;
      }
    }
    notifier_.WaitChange(seen, absl::Seconds(timings_.poll_interval_s));
  }
  ctx->TryCancel();
  reader.join();
  bool drained;
  {
    absl::MutexLock lock(&mu);
    drained = draining && outstanding.empty();
  }
  if (drained) {
    // A worker that drained and left is listed no more.
    (void)queue_.MarkWorker(worker_id, "gone");
    LogInfo("worker drained and left", {{"worker_id", worker_id}});
  }
  return grpc::Status::OK;
}

}  // namespace kforge
