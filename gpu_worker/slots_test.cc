// The slots with a fake evaluator: each lease runs once on a slot's device and its result is
// answered; a built lease reaches the slots first.
#include "gpu_worker/slots.h"

#include <set>

#include "gmock/gmock.h"
#include "gpu_worker/fake_evaluator.h"
#include "gpu_worker/fake_result_writer.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

using ::testing::UnorderedElementsAre;

v1::Lease LeaseOf(const std::string& id) {
  v1::Lease l;
  l.set_lease_id(id);
  l.mutable_request()->set_candidate_source(id);
  return l;
}

TEST(SlotsTest, EachLeaseRunsOnceOnASlotDeviceAndIsAnswered) {
  LeaseQueue leases(2);
  FakeEvaluator evaluator;
  evaluator.answer = [](const v1::EvalRequest& req) {
    v1::EvalResult r;
    r.set_verdict(v1::VERDICT_INCORRECT);
    r.set_reason(req.candidate_source());
    return r;
  };
  FakeResultWriter writer;
  prometheus::Registry registry;
  auto& evaluations = prometheus::BuildCounter().Name("evaluations").Register(registry);
  Slots slots(leases, evaluator, writer, {"cuda:0", "cuda:1"}, registry, evaluations, nullptr);
  slots.Start();
  for (const char* id : {"a", "b", "c"}) leases.Add(LeaseOf(id));
  ASSERT_TRUE(writer.AwaitCount(3));
  leases.Close();
  slots.Join();

  std::set<std::string> answered;
  for (const auto& m : writer.written()) {
    EXPECT_EQ(m.result().result().reason(), m.result().lease_id());
    answered.insert(m.result().lease_id());
  }
  EXPECT_THAT(answered, UnorderedElementsAre("a", "b", "c"));
  for (const auto& call : evaluator.calls()) {
    EXPECT_TRUE(call.device == "cuda:0" || call.device == "cuda:1") << call.device;
    EXPECT_FALSE(call.request.build_only());
  }
  EXPECT_EQ(evaluator.calls().size(), 3u);
  EXPECT_EQ(evaluations.Add({{"verdict", "incorrect"}}).Value(), 3);
  EXPECT_TRUE(leases.Idle());
}

}  // namespace
}  // namespace kforge
