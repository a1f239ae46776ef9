#include "coordinator/job_service.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/base/log.h"
#include "common/base/utf8.h"
#include "common/dialect.h"
#include "common/result_json.h"
#include "common/service.h"
#include "coordinator/task_validation.h"
#include "google/protobuf/util/json_util.h"

namespace kforge {

// A worker is listed as alive when it heartbeated within this window.
constexpr double kWorkerAliveWindowS = 30;

namespace {

grpc::Status Invalid(const std::string& why) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why);
}

void ToWorkerInfo(const WorkerRow& w, v1::WorkerInfo* info) {
  info->set_worker_id(w.worker_id);
  info->set_hostname(w.hostname);
  info->set_gpu_type(w.gpu_type);
  info->set_slots(w.slots);
  info->set_last_heartbeat(w.last_heartbeat);
  info->set_alive(w.alive);
  info->set_leases_held(w.leases_held);
  info->set_draining(w.drained);
  info->set_drained_by(w.drained_by);
  info->set_drained_at(w.drained_at);
}

}  // namespace

grpc::Status JobServiceImpl::CheckGpuTypes(const std::vector<std::string>& types) {
  auto registered = store_.RegisteredGpuTypes();
  if (!registered.ok()) return ToGrpcStatus(registered.status());
  std::set<std::string> known(registered->begin(), registered->end());
  known.insert(limits_.gpu_pools.begin(), limits_.gpu_pools.end());
  known.insert("any");
  for (const std::string& t : types) {
    if (known.count(t)) continue;
    std::string shown = FirstInvalidUtf8(t) ? "(not UTF-8)" : t;
    // The message stays small whatever workers registered: gRPC refuses large ones.
    constexpr size_t kMaxListed = 32;
    std::vector<std::string> listed(known.begin(),
                                    std::next(known.begin(), std::min(known.size(), kMaxListed)));
    if (known.size() > kMaxListed) {
      listed.push_back("and " + std::to_string(known.size() - kMaxListed) + " more");
    }
    return Invalid("no worker pool serves GPU type '" + shown +
                   "' (known: " + absl::StrJoin(listed, ", ") +
                   "); the coordinator's --gpu_pools names pools that have no worker now");
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::SubmitTask(grpc::ServerContext* ctx, const v1::SubmitTaskRequest* req,
                                        v1::SubmitTaskResponse* resp) {
  auto caller = auth_.Check(*ctx, {Role::kResearcher, Role::kTrainer}, "submit tasks");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (absl::Status s = ValidateTaskSource(req->source()); !s.ok()) return ToGrpcStatus(s);
  if (req->name().size() > 256) return Invalid("name must be at most 256 bytes");
  const v1::TaskOptions& o = req->options();
  if (absl::Status s =
          ValidateTaskOptions(o.precision(), o.atol(), o.rtol(), o.correctness_trials(), o.policy(),
                              o.speedup_clock(), o.numerics());
      !s.ok()) {
    return ToGrpcStatus(s);
  }
  if (syntax_ != nullptr) {
    if (absl::Status s = syntax_->Check(req->source()); !s.ok()) return ToGrpcStatus(s);
  }
  std::string options_json;
  (void)google::protobuf::util::MessageToJsonString(req->options(), &options_json);
  std::string name = req->name().empty() ? "unnamed" : req->name();
  auto stored = store_.PutTask(name, req->source(), options_json);
  if (!stored.ok()) return ToGrpcStatus(stored.status());
  resp->set_task_id(stored->task_id);
  resp->set_created(stored->created);
  if (stored->created) Audit(audit_, *caller, "submit_task", stored->task_id);
  LogInfo("task stored", {{"task_id", stored->task_id},
                          {"name", name},
                          {"created", stored->created ? "true" : "false"}});
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest*,
                                         v1::ListWorkersResponse* resp) {
  auto caller = auth_.Check(*ctx, {Role::kOperator}, "list workers");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  auto rows = store_.ListWorkers(kWorkerAliveWindowS);
  if (!rows.ok()) return ToGrpcStatus(rows.status());
  for (const WorkerRow& w : *rows) ToWorkerInfo(w, resp->add_workers());
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::DrainWorker(grpc::ServerContext* ctx,
                                         const v1::DrainWorkerRequest* req,
                                         v1::DrainWorkerResponse* resp) {
  return SetDrained(*ctx, req->worker_id(), true, resp);
}

grpc::Status JobServiceImpl::UndrainWorker(grpc::ServerContext* ctx,
                                           const v1::DrainWorkerRequest* req,
                                           v1::DrainWorkerResponse* resp) {
  return SetDrained(*ctx, req->worker_id(), false, resp);
}

grpc::Status JobServiceImpl::SetDrained(const grpc::ServerContext& ctx,
                                        const std::string& worker_id, bool drained,
                                        v1::DrainWorkerResponse* resp) {
  auto caller = auth_.Check(ctx, {Role::kOperator, Role::kAdmin},
                            drained ? "drain workers" : "undrain workers");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (!IsUuid(worker_id)) return Invalid("worker_id must be a UUID (see kforge workers)");
  auto change = store_.SetDrained(worker_id, drained, caller->name);
  if (!change.ok()) return ToGrpcStatus(change.status());
  ToWorkerInfo(change->worker, resp->mutable_worker());
  resp->set_was_draining(change->was_drained);
  const char* action = drained ? "drain_worker" : "undrain_worker";
  Audit(audit_, *caller, action, worker_id,
        {{"hostname", change->worker.hostname},
         {"gpu_type", change->worker.gpu_type},
         {"was_draining", change->was_drained},
         {"leases_held", change->worker.leases_held}});
  LogInfo(drained ? "worker drained" : "worker undrained",
          {{"worker_id", worker_id},
           {"principal", caller->name},
           {"leases_held", std::to_string(change->worker.leases_held)}});
  // Idle streams of this type on this coordinator look again now; the others within their
  // poll interval.
  if (!drained) notifier_.WorkAdded(change->worker.gpu_type, 1);
  return grpc::Status::OK;
}

// Fills `rec` from a stored row.
void ToRecord(const StoredEvaluation& e, v1::EvaluationRecord* rec) {
  rec->set_evaluation_id(std::to_string(e.evaluation_id));
  rec->set_candidate_id(e.candidate_id);
  rec->set_task_id(e.task_id);
  rec->set_gpu_type(e.gpu_type);
  rec->set_worker_id(e.worker_id);
  rec->set_client_ref(e.client_ref);
  rec->set_batch_id(e.batch_id);
  rec->set_attempts(static_cast<uint32_t>(e.attempts));
  rec->set_finished_at(e.finished_at);
  std::string error;
  if (!ResultFromJson(e.result_json, rec->mutable_result(), &error)) {
    rec->mutable_result()->set_reason("stored result unreadable: " + error);
  }
}

grpc::Status JobServiceImpl::QueryResults(grpc::ServerContext* ctx, const v1::ResultsQuery* req,
                                          v1::ResultsResponse* resp) {
  auto caller =
      auth_.Check(*ctx, {Role::kResearcher, Role::kTrainer, Role::kOperator}, "read results");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  if (!req->job_id().empty()) {
    if (absl::Status s = ValidateUuid(req->job_id(), "job_id"); !s.ok()) return ToGrpcStatus(s);
  }
  EvaluationFilter f;
  f.task_id = req->task_id();
  f.job_id = req->job_id();
  f.candidate_id = req->candidate_id();
  f.gpu_type = req->gpu_type();
  f.tenants = ReadableTenants(*caller);
  if (req->verdict() != v1::VERDICT_UNSPECIFIED) f.verdict = VerdictName(req->verdict());
  f.limit = req->limit() == 0 ? 100 : static_cast<int>(std::min<uint32_t>(req->limit(), 10000));
  auto rows = queue_.Query(f);
  if (!rows.ok()) return ToGrpcStatus(rows.status());
  for (const StoredEvaluation& e : *rows) ToRecord(e, resp->add_evaluations());
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::EvaluateBatch(grpc::ServerContext* ctx,
                                           const v1::EvaluateBatchRequest* req,
                                           grpc::ServerWriter<v1::EvaluationRecord>* writer) {
  auto caller = auth_.Check(*ctx, {Role::kResearcher, Role::kTrainer}, "evaluate batches");
  if (!caller.ok()) return ToGrpcStatus(caller.status());
  std::string batch_id = req->batch_id();
  if (!batch_id.empty()) {
    if (absl::Status s = ValidateUuid(batch_id, "batch_id"); !s.ok()) return ToGrpcStatus(s);
  } else {
    if (req->task_id().empty()) return Invalid("task_id is required");
    if (req->candidates_size() == 0) return Invalid("candidates must not be empty");
    if (req->candidates_size() > limits_.max_candidates_per_batch) {
      return Invalid("at most " + std::to_string(limits_.max_candidates_per_batch) +
                     " candidates per batch");
    }
    if (req->gpu_types_size() == 0) return Invalid("gpu_types must name at least one type (or \"any\")");
    if (req->priority() > limits_.max_priority) {
      return Invalid("priority must be at most " + std::to_string(limits_.max_priority));
    }
    BatchSpec spec;
    spec.task_id = req->task_id();
    spec.priority = static_cast<int>(req->priority());
    spec.owner = caller->name;
    spec.tenant = caller->tenant;
    for (const auto& g : req->gpu_types()) {
      if (g.empty() || g.size() > 64) return Invalid("gpu_types entries must be 1..64 characters");
      spec.gpu_types.push_back(g);
    }
    if (grpc::Status s = CheckGpuTypes(spec.gpu_types); !s.ok()) return s;
    for (int i = 0; i < req->candidates_size(); ++i) {
      const auto& c = req->candidates(i);
      const std::string what = "candidate " + std::to_string(i);
      if (c.source().empty()) return Invalid(what + " has no source");
      if (c.source().size() > limits_.max_candidate_bytes) {
        return Invalid(what + " is larger than " + std::to_string(limits_.max_candidate_bytes) +
                       " bytes");
      }
      if (absl::Status s = ValidateUtf8(c.source(), what); !s.ok()) return ToGrpcStatus(s);
      if (c.source().find('\0') != std::string::npos) return Invalid(what + " contains a NUL byte");
      if (c.dialect() != v1::DIALECT_UNSPECIFIED && !v1::Dialect_IsValid(c.dialect())) {
        return Invalid(what + " has an unknown dialect " + std::to_string(c.dialect()));
      }
      if (c.client_ref().size() > 256) return Invalid(what + ": client_ref is longer than 256 bytes");
      spec.candidates.push_back({c.source(), DialectName(c.dialect() != v1::DIALECT_UNSPECIFIED ? c.dialect() : InferDialect(c.source())), c.client_ref()});
    }
    auto batch = queue_.Enqueue(spec, limits_.max_queue_depth, limits_.max_tenant_queued);
    if (!batch.ok()) return ToGrpcStatus(batch.status());
    batch_id = batch->batch_id;
    for (const auto& [type, n] : batch->queued_per_type) notifier_.WorkAdded(type, n);
    Audit(audit_, *caller, "submit_batch", batch_id,
          {{"task_id", spec.task_id}, {"evaluations", batch->evaluations}});
    LogInfo("batch queued", {{"batch_id", batch_id},
                             {"evaluations", std::to_string(batch->evaluations)},
                             {"principal", caller->name}});
  }
  ctx->AddInitialMetadata("kforge-batch-id", batch_id);
  writer->SendInitialMetadata();
  auto progress = queue_.Progress(batch_id);
  if (!progress.ok()) return ToGrpcStatus(progress.status());
  if (!CanRead(*caller, progress->tenant)) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no batch " + batch_id);
  }
  // Results of a busy batch are read at most this often, a few rows per read, instead of one
  // read per result.
  constexpr absl::Duration kMinReadInterval = absl::Milliseconds(20);
  Notifier::BatchWatch watch(notifier_, batch_id);
  ResultCursor cursor;
  StreamCredentials credentials(auth_, *ctx);
  while (!ctx->IsCancelled()) {
    if (absl::Status s = credentials.Recheck(); !s.ok()) return ToGrpcStatus(s);
    uint64_t seen = watch.generation();
    absl::Time read_at = absl::Now();
    auto done = queue_.FinishedSince(batch_id, cursor);
    if (!done.ok()) return ToGrpcStatus(done.status());
    for (const StoredEvaluation& e : *done) {
      v1::EvaluationRecord rec;
      ToRecord(e, &rec);
      if (!writer->Write(rec)) return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    }
    if (cursor.delivered >= progress->total) return grpc::Status::OK;
    watch.WaitChange(seen, read_at + absl::Seconds(limits_.poll_interval_s));
    absl::SleepFor(read_at + kMinReadInterval - absl::Now());
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "client cancelled");
}

}  // namespace kforge
