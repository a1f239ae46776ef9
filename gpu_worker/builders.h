// Building ahead: `count` builder threads, each taking the oldest queued lease that no idle
// slot is about to take (LeaseQueue::TakeForBuild), running it build-only on the CPUs (no GPU
// visible; the NVRTC target `arch`), which fills the caches the timed run reads, and marking
// it built. A compile error or a static rejection is final: it is answered at once, and no
// slot spends GPU time on it. A rejection while building (global_switch, say) is left to the
// slot, whose snapshot includes the reference. When `cancel` becomes true (a drain hands the
// queued leases back), builds in flight are stopped, not finished.
//
// Threading: Start() starts the builder threads; they end once the LeaseQueue is closed, and
// Join() waits for them. Everything given to the constructor is borrowed and must outlive
// Join().
#ifndef KFORGE_GPU_WORKER_BUILDERS_H_
#define KFORGE_GPU_WORKER_BUILDERS_H_

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gpu_worker/evaluator.h"
#include "gpu_worker/lease_queue.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace kforge {

// True for a build-ahead result no timed run can change: a compile error, or a rejection by a
// static rule (decided before loading: empty stage).
bool IsFinalBuildResult(const v1::EvalResult& result);

class Builders {
 public:
  // `evaluations`: results answered, by verdict (shared with the slots).
  Builders(int count, std::string arch, LeaseQueue& leases, Evaluator& evaluator,
           ResultWriter& writer, const std::atomic<bool>& cancel, prometheus::Registry& metrics,
           prometheus::Family<prometheus::Counter>& evaluations);
  ~Builders();  // joins
  Builders(const Builders&) = delete;
  Builders& operator=(const Builders&) = delete;

  void Start();
  void Join();

 private:
  void RunBuilder();

  const int count_;
  const std::string arch_;
  LeaseQueue& leases_;
  Evaluator& evaluator_;
  ResultWriter& writer_;
  const std::atomic<bool>& cancel_;
  prometheus::Family<prometheus::Counter>& evaluations_;
  prometheus::Family<prometheus::Counter>& builds_;
  prometheus::Histogram& build_seconds_;
  std::vector<std::thread> threads_;
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_BUILDERS_H_
