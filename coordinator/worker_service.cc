#include "coordinator/worker_service.h"

#include "common/base/log.h"
#include "common/service.h"
#include "google/protobuf/util/json_util.h"

namespace kforge {

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

}  // namespace kforge
