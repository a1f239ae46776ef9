#include "gpu_worker/eval/timing.h"

#include <ATen/ATen.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <iterator>
#include <random>
#include <vector>

#include "gpu_worker/eval/activity_trace.h"
#include "gpu_worker/eval/call_profile.h"
#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

std::vector<double> Normal(size_t n, double mean, double sd, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(mean, sd);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

TEST(RelStderrOfMedianTest, MatchesTheNormalTheoryForNormalSamples) {
  // For normal samples the median's standard error is sqrt(pi/2) sd / sqrt(n).
  const double expected = 1.2533 * 0.01 / std::sqrt(2000.0);
  EXPECT_NEAR(RelStderrOfMedian(Normal(2000, 1.0, 0.01, 7)), expected, 0.2 * expected);
}

TEST(RelStderrOfMedianTest, AFewFarSlowSamplesDoNotKeepSamplingGoing) {
  // 5% of samples three times slower (preempted, clock dips): the standard deviation's
  // estimate would be ~1.8%, far above the 0.5% stop; the median barely moves.
  std::vector<double> v = Normal(400, 1.0, 0.002, 11);
  for (size_t i = 0; i < v.size(); i += 20) v[i] = 3.0;
  EXPECT_LT(RelStderrOfMedian(v), 0.001);
}

TEST(RelStderrOfMedianTest, TwoEqualModesKeepTheMedianUncertain) {
  // Half the samples at 1.0, half at 1.1: the median can land on either, so it is not known
  // to 0.5% however many samples there are.
  std::vector<double> v;
  for (int i = 0; i < 2000; ++i) v.push_back(i % 2 ? 1.1 : 1.0);
  EXPECT_GT(RelStderrOfMedian(v), 0.02);
}

TEST(CallHopTest, TheCalibrationUnlessTheCandidatesFastestCallLeftLessBesideItsOwnTime) {
  // The calibration's 0.05 ms fits: the fastest call (0.30) less the fastest claim (0.20).
  EXPECT_DOUBLE_EQ(CallHopMs(0.05, {0.31, 0.30, 0.40}, {0.21, 0.20}), 0.05);
  // A calibration made on a busier machine (0.12 ms) while the calls paid 0.02: capped.
  EXPECT_NEAR(CallHopMs(0.12, {0.06, 0.07}, {0.04, 0.05}), 0.02, 1e-12);
  // A claim above the fastest call: nothing is subtracted.
  EXPECT_DOUBLE_EQ(CallHopMs(0.05, {0.30}, {0.50}), 0);
  // Claims that say nothing (none, zero, not finite) leave the calibration.
  EXPECT_DOUBLE_EQ(CallHopMs(0.05, {0.30}, {}), 0.05);
  EXPECT_DOUBLE_EQ(CallHopMs(0.05, {0.30}, {0.0, std::nan("")}), 0.05);
  EXPECT_DOUBLE_EQ(CallHopMs(0.05, {}, {0.1}), 0.05);
  // A claim of nearly nothing (a candidate that under-reports) cannot raise it either.
  EXPECT_DOUBLE_EQ(CallHopMs(0.05, {0.30}, {1e-9}), 0.05);
}

TEST(InputPlacementsTest, EightForTheDeviceClocksFreshInputsWithinTheirBytes) {
  EXPECT_EQ(InputPlacements(true, true, 512), 8);
  EXPECT_EQ(InputPlacements(true, true, 0), 8);
  EXPECT_EQ(InputPlacements(true, true, 32LL << 20), 8);  // 8 x 32 MiB = 256 MiB
  EXPECT_EQ(InputPlacements(true, true, 100LL << 20), 2);
  EXPECT_EQ(InputPlacements(true, true, 300LL << 20), 1);
  EXPECT_EQ(InputPlacements(true, false, 512), 1);  // the call clock's phase
  EXPECT_EQ(InputPlacements(false, true, 512), 1);  // rotating sets
}

TEST(RelStderrOfMedianTest, TooFewOrNonPositiveSamplesAreUnknown) {
  EXPECT_EQ(RelStderrOfMedian({1.0, 1.0}), 1);
  EXPECT_EQ(RelStderrOfMedian({0.0, 0.0, 0.0}), 1);
  EXPECT_EQ(RelStderrOfMedian({2.0, 2.0, 2.0}), 0);
}

// Activity records on a nanosecond clock; the call is marked at 1000 and returns at `ret`.
ActivityRecord Api(uint64_t start, uint32_t corr) {
  return {ActivityRecord::kApi, start, start + 2000, corr};
}
ActivityRecord Gpu(uint64_t start, uint64_t end, uint32_t corr) {
  return {ActivityRecord::kGpu, start, end, corr};
}

TEST(SplitCallTest, SplitsHostWorkLatencyAndSpanAcrossStreams) {
  // Host work to 21000, a launch whose kernel starts 5 us later and runs 100 us, and a copy on
  // another stream that ends 30 us after it: span from the kernel's start to the copy's end.
  std::vector<ActivityRecord> r = {Api(21000, 7), Gpu(26000, 126000, 7), Api(30000, 8),
                                   Gpu(40000, 156000, 8)};
  CallSplit s = SplitCall(r, 1000, 60000);
  ASSERT_TRUE(s.found);
  EXPECT_EQ(s.gpu_activities, 2);
  EXPECT_DOUBLE_EQ(s.pre_ms, 0.020);
  EXPECT_DOUBLE_EQ(s.lat_ms, 0.005);
  EXPECT_DOUBLE_EQ(s.span_ms, 0.130);
  EXPECT_DOUBLE_EQ(s.post_ms, 0);  // returned while the GPU still ran
  EXPECT_DOUBLE_EQ(s.window_ms, 0.155);
  EXPECT_DOUBLE_EQ(s.host_ms, 0.059);
}

TEST(SplitCallTest, LeavesOutTheTimersOwnFlushAndCountsHostWorkAfterTheLastActivity) {
  // The flush was launched before the mark (correlation 3) and is not the call's; the call's
  // kernel ends at 50000 and the host returns at 90000: 40 us of host work after it count.
  std::vector<ActivityRecord> r = {Api(100, 3), Gpu(500, 20000, 3), Api(5000, 9),
                                   Gpu(10000, 50000, 9)};
  CallSplit s = SplitCall(r, 1000, 90000);
  ASSERT_TRUE(s.found);
  EXPECT_EQ(s.gpu_activities, 1);
  EXPECT_DOUBLE_EQ(s.pre_ms, 0.004);
  EXPECT_DOUBLE_EQ(s.lat_ms, 0.005);
  EXPECT_DOUBLE_EQ(s.span_ms, 0.040);
  EXPECT_DOUBLE_EQ(s.post_ms, 0.040);
  // The host time and the window count from the end of the flush (20000), which ran past the
  // mark: the start event fired no earlier.
  EXPECT_DOUBLE_EQ(s.host_ms, 0.070);
  EXPECT_DOUBLE_EQ(s.window_ms, 0.070);
}

TEST(SplitCallTest, HostTimeSpentWaitingForAPreRollIsNotTheCalls) {
  // A pre-roll launched before the mark runs to 300000; the call queued its kernel at 5000
  // and returned at 8000: no host time of its own. Had it waited (synchronised) until 310000,
  // 10 us would count.
  std::vector<ActivityRecord> r = {Api(500, 2), Gpu(900, 300000, 2), Api(5000, 6),
                                   Gpu(301000, 340000, 6)};
  CallSplit queued = SplitCall(r, 1000, 8000);
  ASSERT_TRUE(queued.found);
  EXPECT_DOUBLE_EQ(queued.host_ms, 0);
  EXPECT_DOUBLE_EQ(queued.span_ms, 0.039);
  EXPECT_DOUBLE_EQ(SplitCall(r, 1000, 310000).host_ms, 0.010);
  // The window opens at the pre-roll's end, as the start event does: untraced work of 0.1 ms
  // after the kernel (the events would read 0.139 ms) exceeds it.
  EXPECT_DOUBLE_EQ(queued.window_ms, 0.040);
}

TEST(SplitCallTest, AKernelLaunchedByTheCallIsCountedWhateverItsName) {
  // The timer's own work is told from the call's by when its API call started, not by name:
  // a candidate kernel that calls itself kforge_preroll is still the call's.
  std::vector<ActivityRecord> r = {Api(500, 2), Gpu(900, 300000, 2), Api(5000, 6),
                                   Gpu(301000, 500000, 6), Api(6000, 7), Gpu(500000, 502000, 7)};
  CallSplit s = SplitCall(r, 1000, 8000);
  EXPECT_EQ(s.gpu_activities, 2);
  EXPECT_DOUBLE_EQ(s.span_ms, 0.201);
  // Without its API record (dropped), the pre-roll, running at the mark, is still the timer's.
  std::vector<ActivityRecord> no_api = {Gpu(900, 300000, 2), Api(5000, 6),
                                        Gpu(301000, 340000, 6)};
  CallSplit bare = SplitCall(no_api, 1000, 8000);
  EXPECT_EQ(bare.gpu_activities, 1);
  EXPECT_DOUBLE_EQ(bare.span_ms, 0.039);
  EXPECT_DOUBLE_EQ(bare.host_ms, 0);
}

TEST(SplitCallTest, NamesTheCallsKernelsOnceInOrderOfStartNotTheTimers) {
  // The pre-roll (kernel 1) is the timer's; the call's kernels start in the order 3, 2, 3, 2.
  std::vector<ActivityRecord> r = {
      Api(500, 2),  Gpu(900, 300000, 2),    Api(5000, 6), Gpu(310000, 320000, 6),
      Api(5100, 7), Gpu(301000, 305000, 7), Api(5200, 8), Gpu(330000, 340000, 8),
      Api(5300, 9), Gpu(350000, 360000, 9)};
  r[1].kernel = 1;
  r[3].kernel = 2;
  r[7].kernel = 3;
  r[9].kernel = 2;
  r[5].kernel = 3;
  CallSplit s = SplitCall(r, 1000, 8000);
  EXPECT_EQ(s.gpu_activities, 4);
  EXPECT_EQ(s.kernels, (std::vector<uint32_t>{3, 2}));
  // A call with no kernel (a copy only) names none.
  r[3].kernel = r[5].kernel = r[7].kernel = r[9].kernel = 0;
  EXPECT_TRUE(SplitCall(r, 1000, 8000).kernels.empty());
}

TEST(SplitCallTest, AnActivityWithoutItsApiCallCountsEverythingBeforeIt) {
  // A kernel no recorded API call launched (a device-side launch, say): no latency is left
  // out; the time from the mark to its start is all counted.
  std::vector<ActivityRecord> r = {Api(2000, 4), Gpu(4000, 9000, 4), Gpu(30000, 40000, 99)};
  CallSplit s = SplitCall(r, 1000, 3000);
  ASSERT_TRUE(s.found);
  EXPECT_DOUBLE_EQ(s.pre_ms, 0.003);
  EXPECT_DOUBLE_EQ(s.lat_ms, 0);
  EXPECT_DOUBLE_EQ(s.span_ms, 0.036);
}

TEST(SplitCallTest, BusyTimeIsTheSpanLessTheGpusIdleGaps) {
  // Three kernels in a row with 2 us and 3 us idle gaps, a copy on another stream that
  // overlaps the first two and fills the gap between them (counted once), and the timer's own
  // flush (launched before the mark) left out: busy 18 + 4 us of a 25 us span.
  std::vector<ActivityRecord> r = {Api(100, 3), Gpu(500, 9000, 3),   Api(2000, 5),
                                   Gpu(10000, 20000, 5),             Api(2100, 6),
                                   Gpu(22000, 28000, 6),             Api(2200, 7),
                                   Gpu(31000, 35000, 7),             Api(2300, 8),
                                   Gpu(15000, 24000, 8)};
  CallSplit s = SplitCall(r, 1000, 3000);
  ASSERT_TRUE(s.found);
  EXPECT_EQ(s.gpu_activities, 4);
  EXPECT_DOUBLE_EQ(s.span_ms, 0.025);
  // [10000, 28000] merged (the copy bridges the first gap), then [31000, 35000].
  EXPECT_DOUBLE_EQ(s.busy_ms, 0.022);
  // One activity: busy is its span.
  CallSplit one = SplitCall({Api(2000, 5), Gpu(10000, 20000, 5)}, 1000, 3000);
  EXPECT_DOUBLE_EQ(one.busy_ms, one.span_ms);
}

TEST(SplitCallTest, QueuedOnlyWhenEveryLaunchReturnedBeforeTheFirstActivityBegan) {
  // A pre-roll (launched at 500, before the mark) to 9000; two kernels launched at 2000 and
  // 2100 (each API call returns 2 us later), run from 10000: the host was done before the GPU
  // began, so the gap between them is the GPU's own.
  const ActivityRecord api = Api(500, 2), preroll = Gpu(900, 9000, 2);
  std::vector<ActivityRecord> r = {
      api, preroll, Api(2000, 5), Gpu(10000, 20000, 5), Api(2100, 6), Gpu(22000, 28000, 6)};
  EXPECT_TRUE(SplitCall(r, 1000, 5000).queued);
  // Without the pre-roll's record (or with no pre-roll), nothing says the call queued behind
  // it: not queued.
  EXPECT_FALSE(SplitCall({r.begin() + 2, r.end()}, 1000, 5000).queued);
  // The second launched at 21000, after the first kernel ended (a forward that waited for it
  // and then worked on the host): the 2 us gap may be the host's; busy is no longer the call.
  r[4] = Api(21000, 6);
  CallSplit late = SplitCall(r, 1000, 24000);
  EXPECT_FALSE(late.queued);
  EXPECT_DOUBLE_EQ(late.busy_ms, 0.016);
  EXPECT_DOUBLE_EQ(late.span_ms, 0.018);
  // A launch whose API call returned only once its copy was done (a synchronous copy): not
  // queued either, though it started before the GPU did.
  r = {api,
       preroll,
       Api(2000, 5),
       Gpu(10000, 20000, 5),
       {ActivityRecord::kApi, 2100, 30500, 6},
       Gpu(22000, 30000, 6)};
  EXPECT_FALSE(SplitCall(r, 1000, 31000).queued);
  // An activity without its API call: when it was launched cannot be told.
  r = {api, preroll, Api(2000, 5), Gpu(10000, 20000, 5), Gpu(22000, 28000, 99)};
  EXPECT_FALSE(SplitCall(r, 1000, 5000).queued);
}

TEST(SplitCallTest, NotQueuedBesideOtherWorkOrWithAStreamThatWaitsForTheHost) {
  const ActivityRecord api = Api(500, 2), preroll = Gpu(900, 9000, 2);
  std::vector<ActivityRecord> r = {api, preroll, Api(2000, 5), Gpu(10000, 20000, 5)};
  ASSERT_TRUE(SplitCall(r, 1000, 5000).queued);
  // A copy another thread launched before the mark, running beside the pre-roll (it could take
  // the input out while the pre-roll holds the GPU): the timer's work is not the pre-roll
  // alone.
  std::vector<ActivityRecord> beside = r;
  beside.push_back(Api(600, 3));
  beside.push_back(Gpu(3000, 3500, 3));
  EXPECT_FALSE(SplitCall(beside, 1000, 5000).queued);
  // An API call in the window that makes a stream wait for the host (or runs host code, or
  // launches a graph): a gap could be the host's whatever its length.
  std::vector<ActivityRecord> waits = r;
  ActivityRecord wait = Api(2500, 7);
  wait.host_ordered = true;
  waits.push_back(wait);
  EXPECT_FALSE(SplitCall(waits, 1000, 5000).queued);
}

TEST(SplitCallTest, WorkLeavesOutAtMostTheFrontEndsShareOfGapsInAll) {
  // A pre-roll, then 11 kernels of 1 us with 3 us gaps: 30 us of short gaps, of which six
  // whole ones (18 us, within kMaxFrontEndGapsNs' 20 us) are left out; the other four count.
  std::vector<ActivityRecord> r = {Api(500, 2), Gpu(900, 9000, 2)};
  for (uint32_t k = 0; k < 11; ++k) {
    r.push_back(Api(2000 + 10 * k, 10 + k));
    r.push_back(Gpu(10000 + 4000 * k, 11000 + 4000 * k, 10 + k));
  }
  CallSplit s = SplitCall(r, 1000, 5000);
  EXPECT_TRUE(s.queued);
  EXPECT_DOUBLE_EQ(s.span_ms, 0.041);
  EXPECT_DOUBLE_EQ(s.busy_ms, 0.011);
  EXPECT_DOUBLE_EQ(s.work_ms, 0.023);
}

TEST(SplitCallTest, WorkBesideThePreRollIsNotQueued) {
  // A pre-roll to 300000. The call's result copy is queued behind it on its stream (from
  // 301000), but its input copy went to a side stream and ran beside the pre-roll (from 6000):
  // the host could compute the result between the two while the pre-roll still held the GPU.
  // Busy time would leave all that out; the span counts it, and the call is not queued.
  std::vector<ActivityRecord> r = {Api(500, 2),  Gpu(900, 300000, 2),
                                   Api(3000, 6), Gpu(301000, 302000, 6),
                                   Api(4000, 7), Gpu(6000, 7000, 7)};
  CallSplit s = SplitCall(r, 1000, 5000);
  EXPECT_FALSE(s.queued);
  EXPECT_DOUBLE_EQ(s.busy_ms, 0.002);
  EXPECT_DOUBLE_EQ(s.span_ms, 0.296);
  // The same two copies both behind the pre-roll: queued.
  r[5] = Gpu(302500, 303500, 7);
  EXPECT_TRUE(SplitCall(r, 1000, 5000).queued);
}

TEST(SplitCallTest, WorkLeavesOutOnlyTheFrontEndsShortGaps) {
  // Three activities after a pre-roll, the gaps 2 us and 50 us (a stream waiting on something
  // that is no kernel, copy or memset: a value the host writes, a host function). Work time
  // leaves out the 2 us and counts the 50 us; busy time leaves out both.
  std::vector<ActivityRecord> r = {
      Api(500, 2),  Gpu(900, 300000, 2),    Api(3000, 5), Gpu(301000, 311000, 5),
      Api(3100, 6), Gpu(313000, 323000, 6), Api(3200, 7), Gpu(373000, 383000, 7)};
  CallSplit s = SplitCall(r, 1000, 5000);
  EXPECT_TRUE(s.queued);
  EXPECT_DOUBLE_EQ(s.span_ms, 0.082);
  EXPECT_DOUBLE_EQ(s.busy_ms, 0.030);
  EXPECT_DOUBLE_EQ(s.work_ms, 0.080);
}

TEST(SplitCallTest, ARuntimeAndADriverRecordOfOneLaunchSpanBoth) {
  // Two API records share correlation 5 (a runtime call and the driver call inside it): the
  // launch returned only at the later end, after the GPU began: not queued.
  std::vector<ActivityRecord> r = {Api(500, 2),
                                   Gpu(900, 300000, 2),
                                   {ActivityRecord::kApi, 3000, 3500, 5},
                                   {ActivityRecord::kApi, 2900, 305000, 5},
                                   Gpu(301000, 311000, 5)};
  EXPECT_FALSE(SplitCall(r, 1000, 306000).queued);
}

TEST(SplitCallTest, NoActivityIsNotFound) {
  EXPECT_FALSE(SplitCall({Api(2000, 4)}, 1000, 3000).found);
  // A GPU timestamp a little before its API call's (two clocks): no negative times.
  CallSplit s = SplitCall({Api(2000, 5), Gpu(1500, 4000, 5)}, 1800, 3000);
  ASSERT_TRUE(s.found);
  EXPECT_DOUBLE_EQ(s.pre_ms, 0);
  EXPECT_DOUBLE_EQ(s.lat_ms, 0);
}

TEST(TimeInterleavedTest, HooksSeeEveryIterationAndTheProgramsGetTheirSet) {
  // CPU mode (the host clock): 3 warm-up pairs, then sampled pairs up to max_samples.
  TimingOptions o;
  o.warmup = 3;
  o.min_samples = 1000;  // never enough: max_samples ends it
  o.max_samples = 5;
  std::vector<uint32_t> before, after;
  std::vector<int> ref_sets, cand_sets;
  IterationHooks hooks;
  hooks.before = [&](uint32_t it) {
    before.push_back(it);
    return static_cast<int>(100 + it);
  };
  hooks.after = [&](uint32_t it) {
    after.push_back(it);
    return true;
  };
  TimingOutcome out = TimeInterleaved([&](int s) { ref_sets.push_back(s); },
                                      [&](int s) { cand_sets.push_back(s); }, o, hooks);
  const std::vector<uint32_t> iterations = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(before, iterations);
  EXPECT_EQ(after, iterations);
  EXPECT_EQ(ref_sets, (std::vector<int>{100, 101, 102, 103, 104, 105, 106, 107}));
  EXPECT_EQ(cand_sets, ref_sets);
  EXPECT_EQ(out.stopped_at, -1);
  EXPECT_EQ(out.ref.ms.size(), 5u);
}

TEST(TimeInterleavedTest, AnAfterHookThatSaysNoStopsTheTiming) {
  TimingOptions o;
  o.warmup = 2;
  o.min_samples = 1000;
  o.max_samples = 50;
  int calls = 0;
  IterationHooks hooks;
  hooks.after = [](uint32_t it) { return it != 3; };  // the second sampled pair
  TimingOutcome out = TimeInterleaved([&](int) { ++calls; }, [&](int) { ++calls; }, o, hooks);
  EXPECT_EQ(out.stopped_at, 3);
  EXPECT_EQ(calls, 8);  // 4 pairs, none after the stop
  EXPECT_EQ(out.ref.ms.size(), 2u);
}

TEST(TimeInterleavedTest, SettledEndsTheSamplingUncappedOnceBothHaveTheMinimum) {
  TimingOptions o;
  o.warmup = 1;
  o.min_samples = 5;
  o.max_samples = 200;
  o.max_rel_stderr = 0;  // the stop rule is never met (rse < 0 never holds)
  o.time_cap_s = 60;
  uint32_t asked = 0;
  o.settled = [&] { return ++asked >= 3; };
  TimingOutcome out = TimeInterleaved([](int) {}, [](int) {}, o);
  EXPECT_TRUE(out.settled);
  EXPECT_EQ(asked, 3u);  // first asked once both had 5 samples
  EXPECT_EQ(out.ref.ms.size(), 7u);
  EXPECT_EQ(out.cand.ms.size(), 7u);
  EXPECT_FALSE(out.reference.capped());
  EXPECT_FALSE(out.candidate.capped());
  EXPECT_TRUE(out.reference.settled());
  EXPECT_TRUE(out.candidate.settled());
}

TEST(TimeInterleavedTest, WithoutSettledTheSameTimingIsCapped) {
  TimingOptions o;
  o.warmup = 1;
  o.min_samples = 5;
  o.max_samples = 12;
  o.max_rel_stderr = 0;
  TimingOutcome out = TimeInterleaved([](int) {}, [](int) {}, o);
  EXPECT_FALSE(out.settled);
  EXPECT_EQ(out.ref.ms.size(), 12u);
  EXPECT_TRUE(out.reference.capped());
}

TEST(SlowEnoughTest, EveryReferenceSampleUnderATenthOfEveryCandidateSampleLessTheOffset) {
  TimingOptions o;
  o.slow_below = 0.1;
  o.slow_min_samples = 3;
  const std::vector<double> ref = {0.05, 0.09, 0.07};
  EXPECT_TRUE(SlowEnough(ref, {1.0, 1.2, 5.0}, o));
  EXPECT_FALSE(SlowEnough(ref, {1.0, 0.85, 5.0}, o));  // one candidate sample under 0.9
  EXPECT_FALSE(SlowEnough(ref, {1.0, 1.2}, o));        // too few
  EXPECT_FALSE(SlowEnough({0.05, 0.09}, {1.0, 1.2, 5.0}, o));
  o.slow_offset_ms = 0.2;  // the hop that may still come off: 0.1 x (1.0 - 0.2) < 0.09
  EXPECT_FALSE(SlowEnough(ref, {1.0, 1.2, 5.0}, o));
  o.slow_offset_ms = 0;
  o.slow_below = 0;  // off
  EXPECT_FALSE(SlowEnough(ref, {100.0, 100.0, 100.0}, o));
}

// Busy-waits about `ms` (the host clock in CPU mode measures it).
void Spin(double ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Host-clock timing that never converges (the stop rule asks a standard error below 0), with the
// slow stop at a tenth after 5 pairs.
TimingOptions SlowStopOptions(uint32_t min_samples, uint32_t max_samples) {
  TimingOptions o;
  o.warmup = 1;
  o.min_samples = min_samples;
  o.max_samples = max_samples;
  o.max_rel_stderr = 0;
  o.time_cap_s = 60;
  o.slow_below = 0.1;
  o.slow_min_samples = 5;
  return o;
}

TEST(TimeInterleavedTest, ASlowCandidateEndsTheSamplingSettledAfterTheSlowMinimum) {
  TimingOutcome out =
      TimeInterleaved([](int) { Spin(0.02); }, [](int) { Spin(2); }, SlowStopOptions(20, 200));
  EXPECT_TRUE(out.slow);
  EXPECT_TRUE(out.settled);
  EXPECT_EQ(out.cand.ms.size(), 5u);
  EXPECT_EQ(out.ref.ms.size(), 5u);
  EXPECT_FALSE(out.candidate.capped());
  EXPECT_TRUE(out.candidate.settled());
  EXPECT_TRUE(out.reference.settled());
}

TEST(TimeInterleavedTest, ACandidateSlowerByLessThanTheFactorIsSampledAsUsual) {
  TimingOutcome out =
      TimeInterleaved([](int) { Spin(0.2); }, [](int) { Spin(1); }, SlowStopOptions(5, 30));
  EXPECT_FALSE(out.slow);
  EXPECT_FALSE(out.settled);
  EXPECT_EQ(out.cand.ms.size(), 30u);
  EXPECT_TRUE(out.candidate.capped());
}

TEST(BetweenProcessesTest, ProgramAndSpeedupDeviationsFollowTheFormulaAndTheCap) {
  const BetweenProcesses b{0.02, 0.030, 0.5};
  EXPECT_NEAR(b.ProgramSd(0.3), std::sqrt(0.0002 + 0.01), 1e-12);
  EXPECT_NEAR(b.SpeedupSd(0.3, 0.15), std::sqrt(0.0004 + 0.01 + 0.04), 1e-12);
  EXPECT_DOUBLE_EQ(b.ProgramSd(0.001), 0.5);  // 30 us on a 1 us program: capped
  EXPECT_DOUBLE_EQ(b.SpeedupSd(0.001, 100), 0.5);
  EXPECT_DOUBLE_EQ(BetweenProcesses{}.SpeedupSd(0.3, 0.15), 0);
}

TEST(SpeedupOfTest, TheBetweenProcessSpreadWidensTheIntervalInQuadrature) {
  v1::TimingStats ref, cand;
  ref.set_median_ms(1.0);
  ref.set_median_ci_low_ms(0.98);
  ref.set_median_ci_high_ms(1.02);
  cand.set_median_ms(0.5);
  cand.set_median_ci_low_ms(0.49);
  cand.set_median_ci_high_ms(0.51);
  const SpeedupInterval within = SpeedupOf(ref, cand);
  EXPECT_DOUBLE_EQ(within.speedup, 2.0);
  EXPECT_DOUBLE_EQ(within.low, 0.98 / 0.51);
  EXPECT_DOUBLE_EQ(within.high, 1.02 / 0.49);
  EXPECT_EQ(within.between_sd, 0);
  const SpeedupInterval across = SpeedupOf(ref, cand, BetweenProcesses{0.02, 0, 0.5});
  EXPECT_DOUBLE_EQ(across.speedup, 2.0);
  EXPECT_DOUBLE_EQ(across.between_sd, 0.02);
  const double repeat = 1.96 * std::sqrt(2.0) * 0.02;
  const double below = std::log(2.0 / within.low), above = std::log(within.high / 2.0);
  EXPECT_NEAR(std::log(2.0 / across.low), std::hypot(below, repeat), 1e-12);
  EXPECT_NEAR(std::log(across.high / 2.0), std::hypot(above, repeat), 1e-12);
}

TEST(TimeInterleavedTest, TheStopRuleAsksNoMoreThanHalfTheBetweenProcessSpread) {
  // Programs of ~0.2 ms whose samples scatter by +-5%: a 0.01% standard error is never
  // reached, but a between-process deviation of 30 us (15% of the median) needs only 3% (half
  // of it, 7.5%, capped at 3%), which 20 samples reach.
  std::mt19937 rng(14);
  std::uniform_real_distribution<double> jitter(0.95, 1.05);
  auto program = [&](int) { Spin(0.2 * jitter(rng)); };
  TimingOptions o;
  o.warmup = 1;
  o.min_samples = 20;
  o.max_samples = 120;
  o.max_rel_stderr = 1e-4;
  o.time_cap_s = 60;
  EXPECT_EQ(TimeInterleaved(program, program, o).ref.ms.size(), 120u);
  o.between = BetweenProcesses{0, 0.030, 0.5};
  EXPECT_EQ(TimeInterleaved(program, program, o).ref.ms.size(), 20u);
}

TEST(TimeInterleavedTest, AShortProgramGetsItsLargerMinimumALongOneDoesNot) {
  TimingOptions o;
  o.warmup = 1;
  o.min_samples = 5;
  o.short_min_samples = 15;
  o.short_below_ms = 0.1;
  o.max_samples = 200;
  o.max_rel_stderr = 100;  // precise enough from the first samples: the minimum decides
  o.time_cap_s = 60;
  auto long_program = [](int) { Spin(0.3); };
  auto short_program = [](int) { Spin(0.01); };
  EXPECT_EQ(TimeInterleaved(long_program, long_program, o).cand.ms.size(), 5u);
  // Either program short: sampling goes on until the short one has its 15.
  EXPECT_EQ(TimeInterleaved(long_program, short_program, o).cand.ms.size(), 15u);
  EXPECT_EQ(TimeInterleaved(short_program, long_program, o).ref.ms.size(), 15u);
}

TEST(TimeInterleavedTest, ASharedReferenceIsTimedInOneIterationOfFourAndPooled) {
  int timed = 0, untimed = 0;
  TimingOptions o;
  o.warmup = 2;
  o.min_samples = 20;
  o.max_samples = 400;
  o.max_rel_stderr = 0.5;  // the minimum counts decide
  o.shared_reference_ms = std::vector<double>(40, 0.2);
  o.reference_timed = [](uint32_t i) { return i % 4 == 0; };
  o.reference_untimed = [&](int) { ++untimed; };
  TimingOutcome out = TimeInterleaved(
      [&](int) {
        ++timed;
        Spin(0.2);
      },
      [](int) { Spin(0.2); }, o);
  // The candidate's 20 samples; the reference timed in the first 8 (the drift check's), then in
  // 1 of 4 (iterations 8, 12 and 16).
  EXPECT_EQ(out.cand.ms.size(), 20u);
  EXPECT_EQ(out.ref.ms.size(), 11u);
  EXPECT_EQ(timed, 2 + 11);  // with the warm-ups
  EXPECT_EQ(untimed, 20 - 11);
  EXPECT_EQ(out.shared_reference_used, 40u);
  EXPECT_EQ(out.shared_reference_ms, o.shared_reference_ms);  // the samples listed first
  EXPECT_EQ(out.reference.n(), 51u);
  EXPECT_TRUE(out.shared_reference_note.empty());
}

TEST(TimeInterleavedTest, ASharedReferenceThatDriftedIsDropped) {
  int untimed = 0;
  TimingOptions o;
  o.warmup = 1;
  o.min_samples = 20;
  o.max_samples = 400;
  o.max_rel_stderr = 0.5;
  o.shared_reference_ms = std::vector<double>(40, 1.0);  // five times what it takes now
  o.reference_timed = [](uint32_t i) { return i % 4 == 0; };
  o.reference_untimed = [&](int) { ++untimed; };
  TimingOutcome out = TimeInterleaved([](int) { Spin(0.2); }, [](int) { Spin(0.2); }, o);
  EXPECT_EQ(out.shared_reference_used, 0u);
  EXPECT_TRUE(out.shared_reference_ms.empty());
  EXPECT_NE(out.shared_reference_note.find("the shared reference was dropped"), std::string::npos)
      << out.shared_reference_note;
  // Compared at the end and dropped: the statistics are the new samples' alone (the first 8,
  // then 1 in 4 of the 20 iterations).
  EXPECT_EQ(untimed, 9);
  EXPECT_EQ(out.ref.ms.size(), 11u);
  EXPECT_EQ(out.reference.n(), 11u);
  EXPECT_LT(out.reference.median_ms(), 0.5);
}

TEST(TimeInterleavedTest, ASharedReferenceNeverCheckedForDriftIsDropped) {
  TimingOptions o;
  o.warmup = 1;
  o.min_samples = 20;
  o.max_samples = 5;  // the cap comes before the 8 new samples the check needs
  o.max_rel_stderr = 0.5;
  o.shared_reference_ms = std::vector<double>(40, 0.2);
  o.reference_timed = [](uint32_t i) { return i % 4 == 0; };
  o.reference_untimed = [](int) {};
  TimingOutcome out = TimeInterleaved([](int) { Spin(0.2); }, [](int) { Spin(0.2); }, o);
  EXPECT_EQ(out.shared_reference_used, 0u);
  EXPECT_NE(out.shared_reference_note.find("too few to compare"), std::string::npos)
      << out.shared_reference_note;
  EXPECT_EQ(out.reference.n(), 5u);
}

// The tests below need a GPU and are skipped without one (CI has none; scripts/gpu_suite.sh's
// unit section runs them).
class TimingGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      GTEST_SKIP() << "no GPU";
    }
  }
};

// On a GPU: the activity clock is used, accounts for every sample of a plain program and
// measures no more than its events do (it leaves the launch latency out).
TEST_F(TimingGpuTest, ActivityClockTimesAPlainProgram) {
  // 256 MB each way, about 0.13 ms of GPU work: longer than the call's host side.
  at::Tensor x = at::randn({1 << 26}, at::TensorOptions().device(at::kCUDA, 0));
  at::Tensor y = at::empty_like(x);
  Program relu = [&](int) { at::relu_out(y, x); };
  TimingOptions o;
  o.cuda = true;
  o.l2_bytes = 64 << 20;
  o.min_samples = 30;
  o.time_cap_s = 5;
  o.require_clock = true;
  TimingOutcome out = TimeInterleaved(relu, Program(), o);
  EXPECT_EQ(out.clock, TimingClock::kActivity);
  ASSERT_GE(out.ref.ms.size(), 30u);
  EXPECT_EQ(out.ref.event_fallbacks, 0u);
  ASSERT_EQ(out.ref.span_ms.size(), out.ref.ms.size());
  for (size_t i = 0; i < out.ref.ms.size(); ++i) {
    EXPECT_LE(out.ref.ms[i], out.ref.event_ms[i] + 0.005) << "sample " << i;
    EXPECT_GT(out.ref.span_ms[i], 0) << "sample " << i;
  }
}

// On a GPU: the device clock counts the time of its trace's flushes, every sample adding to
// it, and never more than the samples took (StageDurations.timing_trace_s).
TEST_F(TimingGpuTest, DeviceClockCountsItsTraceFlushes) {
  std::string why_not;
  std::unique_ptr<DeviceClock> clock = DeviceClock::Start(0, 64 << 20, &why_not);
  ASSERT_NE(clock, nullptr) << why_not;
  EXPECT_EQ(clock->trace_s(), 0);
  at::Tensor x = at::randn({1 << 20}, at::TensorOptions().device(at::kCUDA, 0));
  at::Tensor y = at::empty_like(x);
  double last = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    DeviceClock::Reading r = clock->Sample([&] { at::relu_out(y, x); }, 0.5);
    EXPECT_TRUE(r.ok) << r.why_not;
    EXPECT_GT(clock->trace_s(), last) << "sample " << i;
    last = clock->trace_s();
  }
  EXPECT_LT(last, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// On a GPU: a device-clock sample stamps each of its steps (kDeviceSampleSteps), in order, and
// with a pre-roll of 2 ms the wait for the end event after the launch holds at least half of it
// (the pre-roll runs on the GPU while the host launches), the whole sample no less.
TEST_F(TimingGpuTest, DeviceClockStampsEachStepOfASample) {
  std::string why_not;
  std::unique_ptr<DeviceClock> clock = DeviceClock::Start(0, 64 << 20, &why_not);
  ASSERT_NE(clock, nullptr) << why_not;
  at::Tensor x = at::randn({1 << 20}, at::TensorOptions().device(at::kCUDA, 0));
  at::Tensor y = at::empty_like(x);
  for (int i = 0; i < 3; ++i) {
    DeviceClock::Reading r = clock->Sample([&] { at::relu_out(y, x); }, 2.0);
    EXPECT_TRUE(r.ok) << r.why_not;
    ASSERT_EQ(r.steps_us.size(), std::size(kDeviceSampleSteps)) << "sample " << i;
    for (size_t k = 1; k < r.steps_us.size(); ++k) {
      EXPECT_GE(r.steps_us[k], r.steps_us[k - 1]) << kDeviceSampleSteps[k] << ", sample " << i;
    }
    EXPECT_GE(r.steps_us[4] - r.steps_us[3], 1000) << "the wait for the end event, sample " << i;
    EXPECT_GE(r.steps_us.back(), 2000) << "the whole sample, sample " << i;
  }
}

}  // namespace
}  // namespace kforge::eval
