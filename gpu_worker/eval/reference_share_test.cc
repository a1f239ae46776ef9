#include "gpu_worker/eval/reference_share.h"

#include <chrono>
#include <vector>

#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

using Clock = ReferenceShares::Clock;

v1::EvalRequest Request(const std::string& task = "class Model: ...") {
  v1::EvalRequest r;
  r.set_task_source(task);
  r.set_candidate_source("class ModelNew: ...");
  r.set_device("cuda:0");
  return r;
}

// An ok result whose reference was timed in full on both clocks: `n` samples of `ms`.
v1::EvalResult OkResult(int n, double ms) {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_OK);
  for (v1::TimingStats* t : {r.mutable_reference_call(), r.mutable_reference_device()}) {
    for (int i = 0; i < n; ++i) t->add_samples_ms(ms);
    t->set_n(n);
  }
  for (int i = 0; i < n; ++i) r.mutable_candidate_call()->add_samples_ms(ms / 2);
  return r;
}

// A first evaluation of Request()'s task that timed its reference in full (`n` samples); the
// result as its client (who asked for no samples) gets it.
v1::EvalResult MeasureInFull(ReferenceShares* shares, int n, Clock::time_point t) {
  v1::EvalRequest first = Request();
  shares->Prepare(&first, t);
  v1::EvalResult result = OkResult(n, 0.25);
  shares->Record(first, /*client_keeps_samples=*/false, &result, t);
  return result;
}

TEST(ReferenceSharesTest, AClientsSharedReferenceIsNeverUsed) {
  ReferenceShares shares(/*share_call=*/true);
  v1::EvalRequest r = Request();
  r.add_shared_reference_call_ms(1000);  // a tenant's "reference" of its choosing
  r.add_shared_reference_device_ms(1000);
  r.set_shared_reference_age_s(1);
  EXPECT_FALSE(shares.Prepare(&r, Clock::now()));
  EXPECT_EQ(r.shared_reference_call_ms_size(), 0);
  EXPECT_EQ(r.shared_reference_device_ms_size(), 0);
  EXPECT_EQ(r.shared_reference_age_s(), 0);
  EXPECT_TRUE(r.keep_samples());  // the server asks for the samples it keeps
  v1::EvalRequest one_shot = Request();
  one_shot.add_shared_reference_call_ms(1000);
  ClearSharedReference(&one_shot);
  EXPECT_EQ(one_shot.shared_reference_call_ms_size(), 0);
}

TEST(ReferenceSharesTest, AFullMeasurementIsSharedWithTheSameTaskAndSettingsOnly) {
  ReferenceShares shares(/*share_call=*/true);
  const Clock::time_point t0 = Clock::now();
  v1::EvalResult result = MeasureInFull(&shares, 30, t0);
  // The client did not ask for samples: none left in what it gets.
  EXPECT_EQ(result.reference_call().samples_ms_size(), 0);
  EXPECT_EQ(result.candidate_call().samples_ms_size(), 0);
  EXPECT_EQ(result.reference_call().n(), 30u);

  v1::EvalRequest next = Request();
  next.set_keep_samples(true);
  EXPECT_TRUE(shares.Prepare(&next, t0 + std::chrono::seconds(5)));
  EXPECT_EQ(next.shared_reference_call_ms_size(), 30);
  EXPECT_EQ(next.shared_reference_device_ms_size(), 30);
  EXPECT_DOUBLE_EQ(next.shared_reference_call_ms(0), 0.25);
  EXPECT_NEAR(next.shared_reference_age_s(), 5, 1e-9);

  for (v1::EvalRequest other : {Request("another task"),
                                [] {
                                  v1::EvalRequest r = Request();
                                  r.set_policy("strict");
                                  return r;
                                }(),
                                [] {
                                  v1::EvalRequest r = Request();
                                  r.set_device("cuda:1");
                                  return r;
                                }(),
                                [] {
                                  v1::EvalRequest r = Request();
                                  r.set_min_samples(50);
                                  return r;
                                }()}) {
    shares.Prepare(&other, t0);
    EXPECT_EQ(other.shared_reference_call_ms_size(), 0) << other.ShortDebugString();
  }
}

TEST(ReferenceSharesTest, AnEntryLapsesAfterItsUsesOrItsAge) {
  ReferenceShares shares(/*share_call=*/true);
  const Clock::time_point t0 = Clock::now();
  MeasureInFull(&shares, 20, t0);
  for (int i = 0; i < ReferenceShares::kMaxUses; ++i) {
    v1::EvalRequest r = Request();
    shares.Prepare(&r, t0);
    ASSERT_EQ(r.shared_reference_call_ms_size(), 20) << i;
    // An evaluation that used the share does not renew it.
    v1::EvalResult shared = OkResult(8, 0.25);
    shared.mutable_reference_call()->set_shared_samples(20);
    shared.mutable_reference_device()->set_shared_samples(20);
    shares.Record(r, false, &shared, t0);
  }
  v1::EvalRequest lapsed = Request();
  shares.Prepare(&lapsed, t0);
  EXPECT_EQ(lapsed.shared_reference_call_ms_size(), 0);

  MeasureInFull(&shares, 20, t0);  // a full measurement renews it
  v1::EvalRequest old = Request();
  shares.Prepare(&old, t0 + std::chrono::seconds(601));
  EXPECT_EQ(old.shared_reference_call_ms_size(), 0);
  EXPECT_EQ(shares.size(), 0u);  // both clocks' entries lapsed
}

TEST(ReferenceSharesTest, OnlyTheDeviceClocksReferenceIsSharedByDefault) {
  ReferenceShares shares;
  const Clock::time_point t0 = Clock::now();
  MeasureInFull(&shares, 30, t0);
  v1::EvalRequest next = Request();
  shares.Prepare(&next, t0);
  EXPECT_EQ(next.shared_reference_device_ms_size(), 30);
  EXPECT_EQ(next.shared_reference_call_ms_size(), 0);
}

TEST(ReferenceSharesTest, OnlyAnOkResultWithEnoughSamplesOfItsOwnIsKept) {
  ReferenceShares shares;
  const Clock::time_point t0 = Clock::now();
  v1::EvalRequest r = Request();
  shares.Prepare(&r, t0);
  v1::EvalResult wrong = OkResult(30, 0.25);
  wrong.set_verdict(v1::VERDICT_INCORRECT);
  shares.Record(r, false, &wrong, t0);
  v1::EvalResult few = OkResult(ReferenceShares::kMinSamples - 1, 0.25);
  shares.Record(r, false, &few, t0);
  v1::EvalResult capped = OkResult(30, 0.25);
  capped.mutable_reference_device()->set_capped(true);
  shares.Record(r, false, &capped, t0);
  v1::EvalResult settled = OkResult(30, 0.25);  // a host-bound reference, stopped early
  settled.mutable_reference_device()->set_settled(true);
  shares.Record(r, false, &settled, t0);
  v1::EvalResult noisy = OkResult(30, 0.25);  // a disturbed reference: samples 0-2.9 ms
  for (int i = 0; i < 30; ++i) noisy.mutable_reference_device()->set_samples_ms(i, 0.1 * i);
  shares.Record(r, false, &noisy, t0);
  EXPECT_EQ(shares.size(), 0u);
  v1::EvalResult kept = OkResult(30, 0.25);
  shares.Record(r, /*client_keeps_samples=*/true, &kept, t0);
  EXPECT_EQ(kept.reference_call().samples_ms_size(), 30);  // the client asked for them
  EXPECT_EQ(shares.size(), 1u);  // the device clock's (the call clock's is not shared)
}

}  // namespace
}  // namespace kforge::eval
