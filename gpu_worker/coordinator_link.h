// How the worker reaches the coordinator: registration, and one bidirectional stream at a time
// (kforge.v1.WorkerService). The CoordinatorSession (coordinator_session.h) depends on this
// interface only; GrpcCoordinatorLink (grpc_coordinator_link.h) is the adapter over gRPC, which
// carries the worker's token and TLS settings; FakeCoordinatorLink (fake_coordinator_link.h)
// is the in-memory one for tests.
//
// Thread-safety: a link is used by the session's thread. A stream's Write and Cancel may be
// called from any thread while another thread blocks in Read; Finish once Read returned false.
#ifndef KFORGE_GPU_WORKER_COORDINATOR_LINK_H_
#define KFORGE_GPU_WORKER_COORDINATOR_LINK_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kforge/v1/worker.pb.h"

namespace kforge {

class CoordinatorStream {
 public:
  virtual ~CoordinatorStream() = default;
  // False once the stream is broken; every later write is refused without being tried.
  virtual bool Write(const v1::WorkerMessage& message) = 0;
  // Blocks for the next message; false when the stream ended.
  virtual bool Read(v1::CoordinatorMessage* message) = 0;
  // Ends the stream from the worker's side (Read returns false).
  virtual void Cancel() = 0;
  // How the stream ended: OK, or the coordinator's status (NOT_FOUND: it no longer knows the
  // worker; PERMISSION_DENIED: the worker registered under another identity).
  virtual absl::Status Finish() = 0;
};

class CoordinatorLink {
 public:
  virtual ~CoordinatorLink() = default;
  // UNAUTHENTICATED or PERMISSION_DENIED: the coordinator refused the worker's credentials;
  // other errors: it could not be reached.
  virtual absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& request) = 0;
  virtual std::unique_ptr<CoordinatorStream> Connect() = 0;
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_COORDINATOR_LINK_H_
