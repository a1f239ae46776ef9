// An in-memory Evaluator (evaluator.h) for tests of the slots and builders: records every
// request with its device, answers with `answer` (a compile_error by default), and can hold
// evaluations until released or cancelled, so a test controls what is running when.
//
// Thread-safe.
#ifndef KFORGE_GPU_WORKER_FAKE_EVALUATOR_H_
#define KFORGE_GPU_WORKER_FAKE_EVALUATOR_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gpu_worker/evaluator.h"

namespace kforge {

class FakeEvaluator : public Evaluator {
 public:
  struct Call {
    v1::EvalRequest request;
    std::string device;
  };

  // Set before the first Evaluate.
  std::function<v1::EvalResult(const v1::EvalRequest&)> answer = [](const v1::EvalRequest&) {
    v1::EvalResult r;
    r.set_verdict(v1::VERDICT_COMPILE_ERROR);
    r.set_reason("fake");
    return r;
  };

  // Evaluations started while held wait for Release (or their cancel flag).
  void Hold() {
    absl::MutexLock lock(&mu_);
    held_ = true;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    held_ = false;
  }
  std::vector<Call> calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  // True once `n` evaluations have started; false after `timeout`.
  bool AwaitCalls(size_t n, absl::Duration timeout = absl::Seconds(20)) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return calls_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  }

  v1::EvalResult Evaluate(v1::EvalRequest request, const std::string& device,
                          const std::atomic<bool>* cancel) override {
    absl::MutexLock lock(&mu_);
    calls_.push_back({request, device});
    auto released = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !held_; };
    // The cancel flag is not under the mutex: look at it between short waits.
    while (!mu_.AwaitWithTimeout(absl::Condition(&released), absl::Milliseconds(10))) {
      if (cancel && cancel->load()) {
        v1::EvalResult r;
        r.set_verdict(v1::VERDICT_RUNTIME_ERROR);
        r.set_rule("cancelled");
        return r;
      }
    }
    return answer(request);
  }

 private:
  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_FAKE_EVALUATOR_H_
