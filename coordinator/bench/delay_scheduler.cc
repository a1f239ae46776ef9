#include "coordinator/bench/delay_scheduler.h"

#include "absl/time/time.h"

namespace kforge {

DelayScheduler::DelayScheduler() : thread_([this] { Loop(); }) {}

DelayScheduler::~DelayScheduler() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    changed_.Signal();
  }
  thread_.join();
}

void DelayScheduler::At(BenchClock::time_point due, std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  items_.push(Item{due, next_seq_++, std::move(fn)});
  changed_.Signal();
}

void DelayScheduler::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    if (items_.empty()) {
      changed_.Wait(&mu_);
      continue;
    }
    BenchClock::time_point now = BenchClock::now();
    if (items_.top().due > now) {
      changed_.WaitWithTimeout(&mu_, absl::FromChrono(items_.top().due - now));
      continue;
    }
    std::function<void()> fn = items_.top().fn;
    items_.pop();
    mu_.Unlock();
    fn();
    mu_.Lock();
  }
}

}  // namespace kforge
