#include "coordinator/job_service.h"

#include "common/base/log.h"
#include "common/service.h"
#include "coordinator/task_validation.h"
#include "google/protobuf/util/json_util.h"

namespace kforge {

// A worker is listed as alive when it heartbeated within this window.
constexpr double kWorkerAliveWindowS = 30;

grpc::Status JobServiceImpl::SubmitTask(grpc::ServerContext*, const v1::SubmitTaskRequest* req,
                                        v1::SubmitTaskResponse* resp) {
  if (absl::Status s = ValidateTaskSource(req->source()); !s.ok()) return ToGrpcStatus(s);
  const std::string& opt_precision = req->options().precision();
  if (!opt_precision.empty() && opt_precision != "fp32" && opt_precision != "fp16" &&
      opt_precision != "bf16") {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "options.precision must be fp32, fp16 or bf16, not '" + opt_precision +
                            "'");
  }
  std::string options_json;
  (void)google::protobuf::util::MessageToJsonString(req->options(), &options_json);
  std::string name = req->name().empty() ? "unnamed" : req->name();
  auto stored = store_.PutTask(name, req->source(), options_json);
  if (!stored.ok()) return ToGrpcStatus(stored.status());
  resp->set_task_id(stored->task_id);
  resp->set_created(stored->created);
  LogInfo("task stored", {{"task_id", stored->task_id},
                          {"name", name},
                          {"created", stored->created ? "true" : "false"}});
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::ListWorkers(grpc::ServerContext*, const v1::ListWorkersRequest*,
                                         v1::ListWorkersResponse* resp) {
  auto rows = store_.ListWorkers(kWorkerAliveWindowS);
  if (!rows.ok()) return ToGrpcStatus(rows.status());
  for (const WorkerRow& w : *rows) {
    v1::WorkerInfo* info = resp->add_workers();
    info->set_worker_id(w.worker_id);
    info->set_hostname(w.hostname);
    info->set_gpu_type(w.gpu_type);
    info->set_slots(w.slots);
    info->set_last_heartbeat(w.last_heartbeat);
    info->set_alive(w.alive);
    info->set_leases_held(w.leases_held);
  }
  return grpc::Status::OK;
}

}  // namespace kforge
