#include "coordinator/bench/batch_client.h"

#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/service.h"

namespace kforge {

// One EvaluateBatch call. Owned by Run, which keeps it until its OnDone has run.
class BatchClient::Stream final : public grpc::ClientReadReactor<v1::EvaluationRecord> {
 public:
  Stream(BatchClient& client, int batch) : client_(client), batch_(batch) {}

  void Start(const v1::EvaluateBatchRequest& request) {
    client_.recorder_.BatchSubmitted(batch_, request.candidates_size() * request.gpu_types_size(),
                                     BenchClock::now());
    client_.stub_.async()->EvaluateBatch(&ctx_, &request, this);
    StartRead(&record_);
    StartCall();
  }
  void Cancel() { ctx_.TryCancel(); }

  void OnReadInitialMetadataDone(bool ok) override {
    if (ok) client_.recorder_.BatchEnqueued(batch_, BenchClock::now());
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended; OnDone follows
    int64_t id = 0;
    if (!absl::SimpleAtoi(record_.evaluation_id(), &id)) id = -1;
    client_.recorder_.RecordReceived(
        id, record_.attempts(), record_.result().verdict() == v1::VERDICT_OK, BenchClock::now());
    StartRead(&record_);
  }
  void OnDone(const grpc::Status& status) override { client_.StreamDone(status); }

 private:
  BatchClient& client_;
  const int batch_;
  grpc::ClientContext ctx_;
  v1::EvaluationRecord record_;
};

void BatchClient::StreamDone(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  --open_;
  if (!status.ok() && first_error_.ok()) first_error_ = FromGrpcStatus(status);
}

absl::Status BatchClient::Run(const std::vector<v1::EvaluateBatchRequest>& requests, int window,
                              absl::Time deadline) {
  std::vector<std::unique_ptr<Stream>> streams;
  bool timed_out = false;
  {
    absl::MutexLock lock(&mu_);
    open_ = 0;
    first_error_ = absl::OkStatus();
  }
  for (size_t i = 0; i < requests.size() && !timed_out; ++i) {
    {
      absl::MutexLock lock(&mu_);
      auto has_room = [this, window]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return open_ < window || !first_error_.ok();
      };
      timed_out = !mu_.AwaitWithDeadline(absl::Condition(&has_room), deadline);
      if (timed_out || !first_error_.ok()) break;
      ++open_;
    }
    streams.push_back(std::make_unique<Stream>(*this, static_cast<int>(i)));
    streams.back()->Start(requests[i]);
  }
  bool all_ok = false;
  {
    absl::MutexLock lock(&mu_);
    auto settled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return open_ == 0 || !first_error_.ok();
    };
    if (!timed_out) timed_out = !mu_.AwaitWithDeadline(absl::Condition(&settled), deadline);
    all_ok = open_ == 0 && first_error_.ok();
  }
  // Cancelled outside the lock: a cancellation may run OnDone on this thread.
  if (!all_ok) {
    for (auto& s : streams) s->Cancel();
  }
  absl::MutexLock lock(&mu_);
  auto all_done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return open_ == 0; };
  mu_.Await(absl::Condition(&all_done));
  if (!first_error_.ok() && !timed_out) return first_error_;
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat("batches not finished in time: ", streams.size(), " of ", requests.size(),
                     " submitted, ", recorder_.records(), " records read"));
  }
  return absl::OkStatus();
}

}  // namespace kforge
