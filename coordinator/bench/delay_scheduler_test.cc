#include "coordinator/bench/delay_scheduler.h"

#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

TEST(DelaySchedulerTest, RunsInDueOrderNotBefore) {
  DelayScheduler scheduler;
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification last;
  BenchClock::time_point start = BenchClock::now();
  BenchClock::time_point ran_last;
  scheduler.At(start + std::chrono::milliseconds(30), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(2);
    ran_last = BenchClock::now();
    last.Notify();
  });
  scheduler.At(start + std::chrono::milliseconds(10), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(1);
  });
  last.WaitForNotification();
  absl::MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_GE(ran_last - start, std::chrono::milliseconds(30));
}

TEST(DelaySchedulerTest, DestructorDropsPendingCallbacks) {
  bool ran = false;
  {
    DelayScheduler scheduler;
    scheduler.At(BenchClock::now() + std::chrono::hours(1), [&] { ran = true; });
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace kforge
