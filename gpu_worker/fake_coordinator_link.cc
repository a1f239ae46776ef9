#include "gpu_worker/fake_coordinator_link.h"

#include <string>
#include <utility>

namespace kforge {
namespace {

// What the session owns: a handle on a stream the test keeps too.
class StreamHandle : public CoordinatorStream {
 public:
  explicit StreamHandle(std::shared_ptr<FakeCoordinatorStream> stream)
      : stream_(std::move(stream)) {}
  bool Write(const v1::WorkerMessage& m) override { return stream_->Write(m); }
  bool Read(v1::CoordinatorMessage* m) override { return stream_->Read(m); }
  void Cancel() override { stream_->Cancel(); }
  absl::Status Finish() override { return stream_->Finish(); }

 private:
  std::shared_ptr<FakeCoordinatorStream> stream_;
};

}  // namespace

void FakeCoordinatorStream::Push(v1::CoordinatorMessage message) {
  absl::MutexLock lock(&mu_);
  inbox_.push_back(std::move(message));
}

void FakeCoordinatorStream::End(absl::Status status) {
  absl::MutexLock lock(&mu_);
  ended_ = std::move(status);
}

void FakeCoordinatorStream::Break() {
  absl::MutexLock lock(&mu_);
  broken_ = true;
}

std::vector<v1::WorkerMessage> FakeCoordinatorStream::written() {
  absl::MutexLock lock(&mu_);
  return written_;
}

bool FakeCoordinatorStream::AwaitWritten(const Predicate& holds, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return holds(written_); };
  return mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
}

bool FakeCoordinatorStream::cancelled() {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool FakeCoordinatorStream::AwaitCancelled(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&cancelled_), timeout);
}

bool FakeCoordinatorStream::Write(const v1::WorkerMessage& message) {
  absl::MutexLock lock(&mu_);
  if (broken_ || cancelled_ || ended_) return false;
  written_.push_back(message);
  return true;
}

bool FakeCoordinatorStream::Read(v1::CoordinatorMessage* message) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !inbox_.empty() || ended_.has_value() || cancelled_;
  };
  mu_.Await(absl::Condition(&ready));
  if (cancelled_ || inbox_.empty()) return false;
  *message = std::move(inbox_.front());
  inbox_.pop_front();
  return true;
}

void FakeCoordinatorStream::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
}

absl::Status FakeCoordinatorStream::Finish() {
  absl::MutexLock lock(&mu_);
  if (ended_) return *ended_;
  return absl::CancelledError("cancelled by the worker");
}

void FakeCoordinatorLink::ScriptRegistrations(
    std::vector<absl::StatusOr<v1::RegisterResponse>> answers) {
  absl::MutexLock lock(&mu_);
  for (auto& a : answers) scripted_.push_back(std::move(a));
}

void FakeCoordinatorLink::EndNewStreams(absl::Status status) {
  absl::MutexLock lock(&mu_);
  end_new_streams_ = std::move(status);
}

std::vector<v1::RegisterRequest> FakeCoordinatorLink::registrations() {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

std::shared_ptr<FakeCoordinatorStream> FakeCoordinatorLink::AwaitStream(size_t n,
                                                                        absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return streams_.size() > n; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) return nullptr;
  return streams_[n];
}

size_t FakeCoordinatorLink::streams() {
  absl::MutexLock lock(&mu_);
  return streams_.size();
}

absl::StatusOr<v1::RegisterResponse> FakeCoordinatorLink::Register(
    const v1::RegisterRequest& request) {
  absl::MutexLock lock(&mu_);
  registrations_.push_back(request);
  if (!scripted_.empty()) {
    absl::StatusOr<v1::RegisterResponse> answer = std::move(scripted_.front());
    scripted_.pop_front();
    return answer;
  }
  v1::RegisterResponse response;
  response.set_worker_id("worker-" + std::to_string(registrations_.size()));
  return response;
}

std::unique_ptr<CoordinatorStream> FakeCoordinatorLink::Connect() {
  auto stream = std::make_shared<FakeCoordinatorStream>();
  absl::MutexLock lock(&mu_);
  if (end_new_streams_) stream->End(*end_new_streams_);
  streams_.push_back(stream);
  return std::make_unique<StreamHandle>(stream);
}

}  // namespace kforge
