// An in-memory CoordinatorLink (coordinator_link.h) for tests of the CoordinatorSession: the
// test plays the coordinator. Registrations answer as scripted (then with a fresh worker id);
// each Connect makes a FakeCoordinatorStream the test reaches through stream(n), pushes
// messages into, ends with a status, or breaks; everything the worker writes is recorded.
// Waits take a condition and a timeout, never a sleep.
//
// Thread-safe: the session's threads and the test's run at once.
#ifndef KFORGE_GPU_WORKER_FAKE_COORDINATOR_LINK_H_
#define KFORGE_GPU_WORKER_FAKE_COORDINATOR_LINK_H_

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gpu_worker/coordinator_link.h"

namespace kforge {

class FakeCoordinatorStream : public CoordinatorStream {
 public:
  using Predicate = std::function<bool(const std::vector<v1::WorkerMessage>&)>;

  // The coordinator's side.
  void Push(v1::CoordinatorMessage message);
  // Ends the stream as the coordinator would, with `status` from Finish.
  void End(absl::Status status);
  void Break();  // writes fail from now on
  std::vector<v1::WorkerMessage> written();
  // True once `holds(written messages)`; false after `timeout`.
  bool AwaitWritten(const Predicate& holds, absl::Duration timeout = absl::Seconds(20));
  bool cancelled();
  bool AwaitCancelled(absl::Duration timeout = absl::Seconds(20));

  // CoordinatorStream.
  bool Write(const v1::WorkerMessage& message) override;
  bool Read(v1::CoordinatorMessage* message) override;
  void Cancel() override;
  absl::Status Finish() override;

 private:
  absl::Mutex mu_;
  std::deque<v1::CoordinatorMessage> inbox_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::WorkerMessage> written_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> ended_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

class FakeCoordinatorLink : public CoordinatorLink {
 public:
  // The next registrations answer these, in order; afterwards each gets "worker-<n>".
  void ScriptRegistrations(std::vector<absl::StatusOr<v1::RegisterResponse>> answers);
  // Every stream connected from now on ends at once with `status`.
  void EndNewStreams(absl::Status status);
  std::vector<v1::RegisterRequest> registrations();
  // The n-th stream connected (from 0), once it exists; null after `timeout`.
  std::shared_ptr<FakeCoordinatorStream> AwaitStream(size_t n,
                                                     absl::Duration timeout = absl::Seconds(20));
  size_t streams();

  // CoordinatorLink.
  absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& request) override;
  std::unique_ptr<CoordinatorStream> Connect() override;

 private:
  absl::Mutex mu_;
  std::deque<absl::StatusOr<v1::RegisterResponse>> scripted_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::RegisterRequest> registrations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<FakeCoordinatorStream>> streams_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Status> end_new_streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_FAKE_COORDINATOR_LINK_H_
