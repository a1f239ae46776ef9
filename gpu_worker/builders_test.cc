// Building ahead with a fake evaluator and no slot running: builders leave the leases idle
// slots will take, answer final build results at once, mark the others built, and stop
// without answering when cancelled.
#include "gpu_worker/builders.h"

#include <atomic>

#include "gmock/gmock.h"
#include "gpu_worker/fake_evaluator.h"
#include "gpu_worker/fake_result_writer.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

v1::Lease LeaseOf(const std::string& id) {
  v1::Lease l;
  l.set_lease_id(id);
  l.mutable_request()->set_candidate_source(id);
  return l;
}

v1::EvalResult Verdict(v1::Verdict verdict, const std::string& stage = "") {
  v1::EvalResult r;
  r.set_verdict(verdict);
  r.set_stage(stage);
  return r;
}

TEST(IsFinalBuildResultTest, CompileErrorsAndStaticRejectionsOnly) {
  EXPECT_TRUE(IsFinalBuildResult(Verdict(v1::VERDICT_COMPILE_ERROR)));
  EXPECT_TRUE(IsFinalBuildResult(Verdict(v1::VERDICT_REJECTED)));
  EXPECT_FALSE(IsFinalBuildResult(Verdict(v1::VERDICT_REJECTED, "build")));
  EXPECT_FALSE(IsFinalBuildResult(Verdict(v1::VERDICT_OK)));
  EXPECT_FALSE(IsFinalBuildResult(Verdict(v1::VERDICT_RUNTIME_ERROR)));
}

class BuildersTest : public ::testing::Test {
 protected:
  // One slot (never started) and one builder for the arch sm_90.
  void Start() {
    builders_ = std::make_unique<Builders>(1, "sm_90", leases_, evaluator_, writer_, cancel_,
                                           registry_, evaluations_);
    builders_->Start();
  }
  void TearDown() override {
    leases_.Close();
    builders_->Join();
  }
  double Builds(const std::string& outcome) {
    return prometheus::BuildCounter()
        .Name("kforge_worker_builds_ahead_total")
        .Register(registry_)
        .Add({{"outcome", outcome}})
        .Value();
  }

  LeaseQueue leases_{1};
  FakeEvaluator evaluator_;
  FakeResultWriter writer_;
  std::atomic<bool> cancel_{false};
  prometheus::Registry registry_;
  prometheus::Family<prometheus::Counter>& evaluations_ =
      prometheus::BuildCounter().Name("evaluations").Register(registry_);
  std::unique_ptr<Builders> builders_;
};

TEST_F(BuildersTest, AFinalBuildResultIsAnsweredAndNeverReachesASlot) {
  Start();
  leases_.Add(LeaseOf("for-the-slot"));
  leases_.Add(LeaseOf("ahead"));
  ASSERT_TRUE(writer_.AwaitCount(1));
  auto calls = evaluator_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.candidate_source(), "ahead");
  EXPECT_TRUE(calls[0].request.build_only());
  EXPECT_EQ(calls[0].request.arch(), "sm_90");
  EXPECT_EQ(calls[0].device, "cpu");
  auto written = writer_.written();
  ASSERT_EQ(written.size(), 1u);
  EXPECT_EQ(written[0].result().lease_id(), "ahead");
  EXPECT_EQ(Builds("compile_error"), 1);
  EXPECT_EQ(evaluations_.Add({{"verdict", "compile_error"}}).Value(), 1);
  EXPECT_EQ(Builds("built"), 0);
}

TEST_F(BuildersTest, ABuiltLeaseReachesTheSlotFirst) {
  evaluator_.answer = [](const v1::EvalRequest&) { return Verdict(v1::VERDICT_OK); };
  evaluator_.Hold();
  Start();
  leases_.Add(LeaseOf("for-the-slot"));
  leases_.Add(LeaseOf("ahead"));
  ASSERT_TRUE(evaluator_.AwaitCalls(1));
  evaluator_.Release();
  // The slot waits for nothing: the lease being built is skipped until built, then first.
  auto first = leases_.TakeForSlot();
  ASSERT_TRUE(first.has_value());
  if (first->lease.lease_id() == "for-the-slot") first = leases_.TakeForSlot();
  EXPECT_EQ(first->lease.lease_id(), "ahead");
  EXPECT_TRUE(first->built_ahead);
  EXPECT_TRUE(writer_.written().empty());
  EXPECT_EQ(Builds("built"), 1);
}

TEST_F(BuildersTest, ACancelledBuildIsNotAnswered) {
  evaluator_.Hold();
  Start();
  leases_.Add(LeaseOf("for-the-slot"));
  leases_.Add(LeaseOf("ahead"));
  ASSERT_TRUE(evaluator_.AwaitCalls(1));
  cancel_ = true;
  leases_.StartDraining();
  leases_.Close();
  builders_->Join();
  EXPECT_TRUE(writer_.written().empty());
  EXPECT_EQ(Builds("cancelled"), 1);
}

}  // namespace
}  // namespace kforge
