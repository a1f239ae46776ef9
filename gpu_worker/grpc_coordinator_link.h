// The CoordinatorLink (coordinator_link.h) over gRPC: a channel to the coordinator's address
// that verifies it with the TLS settings and carries the worker's API token on every call
// (common/channel.h); Register with a 5 s deadline.
//
// Thread-safe as coordinator_link.h says; the channel is shared by every stream.
#ifndef KFORGE_GPU_WORKER_GRPC_COORDINATOR_LINK_H_
#define KFORGE_GPU_WORKER_GRPC_COORDINATOR_LINK_H_

#include <memory>
#include <string>

#include "common/channel.h"
#include "gpu_worker/coordinator_link.h"
#include "kforge/v1/worker.grpc.pb.h"

namespace kforge {

class GrpcCoordinatorLink : public CoordinatorLink {
 public:
  GrpcCoordinatorLink(const std::string& address, const ClientCredentials& credentials);
  absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& request) override;
  std::unique_ptr<CoordinatorStream> Connect() override;

 private:
  std::unique_ptr<v1::WorkerService::Stub> stub_;
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_GRPC_COORDINATOR_LINK_H_
