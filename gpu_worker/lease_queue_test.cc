// The worker's lease queue: which lease a slot or a builder takes, build results, answers
// into the stream or the outbox, and draining.
#include "gpu_worker/lease_queue.h"

#include <thread>

#include "gmock/gmock.h"
#include "gpu_worker/fake_result_writer.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

v1::Lease LeaseOf(const std::string& id) {
  v1::Lease l;
  l.set_lease_id(id);
  return l;
}

TEST(LeaseQueueTest, SlotsTakeTheOldestLease) {
  LeaseQueue q(2);
  EXPECT_EQ(q.Add(LeaseOf("a")), 1u);
  EXPECT_EQ(q.Add(LeaseOf("b")), 2u);
  auto work = q.TakeForSlot();
  ASSERT_TRUE(work.has_value());
  EXPECT_EQ(work->lease.lease_id(), "a");
  EXPECT_FALSE(work->built_ahead);
  EXPECT_THAT(q.HeldIds(), ElementsAre("a", "b"));  // running leases stay held
}

TEST(LeaseQueueTest, BuildersLeaveTheOldestLeasesToIdleSlots) {
  LeaseQueue q(1);
  q.Add(LeaseOf("a"));
  q.Add(LeaseOf("b"));
  auto build = q.TakeForBuild();  // "a" is the idle slot's
  ASSERT_TRUE(build.has_value());
  EXPECT_EQ(build->lease_id(), "b");
}

TEST(LeaseQueueTest, ABuiltLeaseGoesFirstAndOneBeingBuiltIsNotTaken) {
  LeaseQueue q(1);
  q.Add(LeaseOf("a"));
  q.Add(LeaseOf("b"));
  q.Add(LeaseOf("c"));
  ASSERT_EQ(q.TakeForBuild()->lease_id(), "b");
  ASSERT_EQ(q.TakeForBuild()->lease_id(), "c");
  EXPECT_FALSE(q.FinishBuild("c", /*final=*/false));  // built, still queued
  auto first = q.TakeForSlot();
  EXPECT_EQ(first->lease.lease_id(), "c");
  EXPECT_TRUE(first->built_ahead);
  auto second = q.TakeForSlot();
  EXPECT_EQ(second->lease.lease_id(), "a");  // "b" is still being built
}

TEST(LeaseQueueTest, AFinalBuildIsAnsweredInsteadOfRun) {
  LeaseQueue q(0);
  q.Add(LeaseOf("a"));
  ASSERT_EQ(q.TakeForBuild()->lease_id(), "a");
  ASSERT_TRUE(q.FinishBuild("a", /*final=*/true));
  EXPECT_FALSE(q.Idle());  // running until answered
  FakeResultWriter writer;
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_COMPILE_ERROR);
  q.Answer("a", r, writer);
  ASSERT_EQ(writer.written().size(), 1u);
  EXPECT_EQ(writer.written()[0].result().lease_id(), "a");
  EXPECT_EQ(writer.written()[0].result().result().verdict(), v1::VERDICT_COMPILE_ERROR);
  EXPECT_THAT(q.HeldIds(), IsEmpty());
  EXPECT_TRUE(q.Idle());
}

TEST(LeaseQueueTest, AResultNoStreamTakesWaitsInTheOutbox) {
  LeaseQueue q(1);
  q.Add(LeaseOf("a"));
  q.TakeForSlot();
  FakeResultWriter writer;
  writer.set_connected(false);
  q.Answer("a", v1::EvalResult(), writer);
  EXPECT_THAT(q.HeldIds(), IsEmpty());  // answered: not listed in the next hello
  EXPECT_EQ(q.undelivered(), 1u);
  EXPECT_FALSE(q.Idle());
  auto outbox = q.TakeOutbox();
  ASSERT_EQ(outbox.size(), 1u);
  EXPECT_EQ(outbox[0].result().lease_id(), "a");
  EXPECT_TRUE(q.Idle());
}

TEST(LeaseQueueTest, DrainingHandsTheQueuedLeasesBackOnceAndRefusesNewOnes) {
  LeaseQueue q(1);
  q.Add(LeaseOf("a"));
  q.Add(LeaseOf("b"));
  q.TakeForSlot();  // "a" runs
  std::vector<v1::Lease> released = q.StartDraining();
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].lease_id(), "b");
  EXPECT_TRUE(q.draining());
  EXPECT_THAT(q.HeldIds(), ElementsAre("a"));
  EXPECT_THAT(q.StartDraining(), IsEmpty());
  EXPECT_FALSE(q.Add(LeaseOf("c")).has_value());
  EXPECT_FALSE(q.FinishBuild("b", true));  // handed back meanwhile
}

TEST(LeaseQueueTest, CloseEndsTheWaits) {
  LeaseQueue q(1);
  std::thread slot([&] { EXPECT_FALSE(q.TakeForSlot().has_value()); });
  std::thread builder([&] { EXPECT_FALSE(q.TakeForBuild().has_value()); });
  q.Close();
  slot.join();
  builder.join();
}

}  // namespace
}  // namespace kforge
