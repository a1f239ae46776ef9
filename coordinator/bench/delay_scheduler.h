// Runs callbacks at given times on one thread of its own: the simulated evaluation time of
// SimWorker (--eval_ms), so that no gRPC callback thread ever sleeps.
//
// Thread-safe. Callbacks run one at a time, in due order, and must be short. The destructor
// drops the callbacks not yet run and joins the thread.
#ifndef KFORGE_COORDINATOR_BENCH_DELAY_SCHEDULER_H_
#define KFORGE_COORDINATOR_BENCH_DELAY_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/bench/dispatch_recorder.h"

namespace kforge {

class DelayScheduler {
 public:
  DelayScheduler();
  ~DelayScheduler();
  DelayScheduler(const DelayScheduler&) = delete;
  DelayScheduler& operator=(const DelayScheduler&) = delete;

  void At(BenchClock::time_point due, std::function<void()> fn);

 private:
  struct Item {
    BenchClock::time_point due;
    uint64_t seq;  // keeps equal due times in submission order
    std::function<void()> fn;
    bool operator>(const Item& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  void Loop();

  absl::Mutex mu_;
  absl::CondVar changed_;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> items_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_BENCH_DELAY_SCHEDULER_H_
