#include "coordinator/notifier.h"

#include <thread>

#include "gtest/gtest.h"

namespace kforge {
namespace {

using WorkWaiter = Notifier::WorkWaiter;

TEST(NotifierTest, NewWorkWakesOnlyArmedWaitersOfItsTypeUntilTheirSlotsCoverIt) {
  Notifier n;
  WorkWaiter h1(n, "H200"), h2(n, "H200"), h3(n, "H200"), busy(n, "H200"), a100(n, "A100");
  h1.Arm(2);
  h2.Arm(1);
  h3.Arm(1);
  a100.Arm(1);
  n.WorkAdded("H200", 3);  // h1 (2 slots) and h2 (1 slot) cover three evaluations
  EXPECT_EQ(h1.generation(), 1u);
  EXPECT_EQ(h2.generation(), 1u);
  EXPECT_EQ(h3.generation(), 0u);
  EXPECT_EQ(busy.generation(), 0u);  // never armed: all its slots are busy
  EXPECT_EQ(a100.generation(), 0u);
  n.WorkAdded("H200", 5);  // h1 and h2 were disarmed by their wake-up; h3 is left
  EXPECT_EQ(h1.generation(), 1u);
  EXPECT_EQ(h3.generation(), 1u);
}

TEST(NotifierTest, WorkForAnyTypeWakesEveryLane) {
  Notifier n;
  WorkWaiter h(n, "H200"), a(n, "A100");
  h.Arm(1);
  a.Arm(1);
  n.WorkAdded("any", 2);
  EXPECT_EQ(h.generation(), 1u);
  EXPECT_EQ(a.generation(), 1u);
}

TEST(NotifierTest, WaitReturnsAtOnceWhenWokenSinceSeenAndDisarms) {
  Notifier n;
  WorkWaiter w(n, "H200");
  uint64_t seen = w.generation();
  w.Arm(1);
  w.Wake();
  w.Wait(seen, absl::Hours(1));  // woken before the wait began: no hour passes
  w.Arm(1);
  w.Wait(w.generation(), absl::ZeroDuration());  // timed out: disarmed too
  n.WorkAdded("H200", 1);
  EXPECT_EQ(w.generation(), seen + 1);
}

TEST(NotifierTest, ADisarmedWaiterIsNotWoken) {
  Notifier n;
  WorkWaiter w(n, "H200");
  w.Arm(1);
  w.Disarm();
  n.WorkAdded("H200", 1);
  EXPECT_EQ(w.generation(), 0u);
}

TEST(NotifierTest, BatchChangesWakeOnlyThatBatchsWatches) {
  Notifier n;
  Notifier::BatchWatch a1(n, "a"), a2(n, "a"), b(n, "b");
  n.BatchChanged("a");
  EXPECT_EQ(a1.generation(), 1u);
  EXPECT_EQ(a2.generation(), 1u);
  EXPECT_EQ(b.generation(), 0u);
  { Notifier::BatchWatch gone(n, "c"); }
  n.BatchChanged("c");  // nobody watches any more: nothing to wake
}

TEST(NotifierTest, AWaitingThreadIsWokenByAnotherThread) {
  Notifier n;
  Notifier::BatchWatch watch(n, "a");
  uint64_t seen = watch.generation();
  std::thread waker([&] { n.BatchChanged("a"); });
  watch.WaitChange(seen, absl::InfiniteFuture());
  waker.join();
  EXPECT_EQ(watch.generation(), seen + 1);
}

}  // namespace
}  // namespace kforge
