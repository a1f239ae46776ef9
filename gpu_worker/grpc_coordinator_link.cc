#include "gpu_worker/grpc_coordinator_link.h"

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/service.h"
#include "grpcpp/grpcpp.h"

namespace kforge {
namespace {

class GrpcCoordinatorStream : public CoordinatorStream {
 public:
  explicit GrpcCoordinatorStream(v1::WorkerService::Stub& stub) : stream_(stub.Connect(&ctx_)) {}
  bool Write(const v1::WorkerMessage& m) override {
    absl::MutexLock lock(&mu_);
    return !broken_ && (broken_ = !stream_->Write(m), !broken_);
  }
  bool Read(v1::CoordinatorMessage* m) override { return stream_->Read(m); }
  void Cancel() override { ctx_.TryCancel(); }
  absl::Status Finish() override { return FromGrpcStatus(stream_->Finish()); }

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>> stream_;
  absl::Mutex mu_;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

GrpcCoordinatorLink::GrpcCoordinatorLink(const std::string& address,
                                         const ClientCredentials& credentials)
    : stub_(v1::WorkerService::NewStub(MakeChannel(address, credentials))) {}

absl::StatusOr<v1::RegisterResponse> GrpcCoordinatorLink::Register(
    const v1::RegisterRequest& request) {
  v1::RegisterResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status s = stub_->Register(&ctx, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

std::unique_ptr<CoordinatorStream> GrpcCoordinatorLink::Connect() {
  return std::make_unique<GrpcCoordinatorStream>(*stub_);
}

}  // namespace kforge
