// An in-memory ResultWriter (lease_queue.h) for tests: records what is written while
// `connected`, refuses it otherwise (the result then waits in the queue's outbox).
//
// Thread-safe.
#ifndef KFORGE_GPU_WORKER_FAKE_RESULT_WRITER_H_
#define KFORGE_GPU_WORKER_FAKE_RESULT_WRITER_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gpu_worker/lease_queue.h"

namespace kforge {

class FakeResultWriter : public ResultWriter {
 public:
  bool Write(const v1::WorkerMessage& m) override {
    absl::MutexLock lock(&mu_);
    if (!connected_) return false;
    written_.push_back(m);
    return true;
  }
  void set_connected(bool connected) {
    absl::MutexLock lock(&mu_);
    connected_ = connected;
  }
  std::vector<v1::WorkerMessage> written() {
    absl::MutexLock lock(&mu_);
    return written_;
  }
  // True once `n` messages were written; false after `timeout`.
  bool AwaitCount(size_t n, absl::Duration timeout = absl::Seconds(20)) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return written_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  }

 private:
  absl::Mutex mu_;
  bool connected_ ABSL_GUARDED_BY(mu_) = true;
  std::vector<v1::WorkerMessage> written_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_FAKE_RESULT_WRITER_H_
