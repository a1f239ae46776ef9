#include "gpu_worker/eval/device_preroll.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace kforge::eval {
namespace {

TEST(PrerollGovernorTest, ALateSampleIsLeftOutAndThePrerollGrows) {
  PrerollGovernor g(0.5, 5, 0.01);
  EXPECT_TRUE(g.Keep(0.0));
  EXPECT_FALSE(g.Keep(0.3));  // the host launched 0.3 ms after the pre-roll ended
  g.AfterIteration(0.3, true);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 0.5 + 2 * 0.3 + 0.1);
  EXPECT_EQ(g.dropped(), 1u);
  EXPECT_DOUBLE_EQ(g.late_kept_ms(), 0);  // nothing late was used
}

TEST(PrerollGovernorTest, LatenessWithinTheToleranceIsKeptAndChangesNothing) {
  PrerollGovernor g(0.5, 5, 0.01);
  EXPECT_TRUE(g.Keep(0.005));
  g.AfterIteration(0.005, true);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 0.5);
  EXPECT_EQ(g.dropped(), 0u);
  EXPECT_DOUBLE_EQ(g.late_kept_ms(), 0.005);
}

TEST(PrerollGovernorTest, AtItsMaximumLateSamplesAreKeptAndReported) {
  // A host that is always 3 ms late (a candidate sleeping in forward): the pre-roll grows to
  // its bound, then the samples are used, so the timing ends instead of dropping forever.
  PrerollGovernor g(0.5, 5, 0.01);
  int kept = 0;
  for (int it = 0; it < 10; ++it) {
    if (g.Keep(3.0)) ++kept;
    g.AfterIteration(3.0, true);
  }
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 5);
  EXPECT_EQ(g.dropped(), 1u);  // 0.5 -> 5 in one step (0.5 + 6.1, bounded)
  EXPECT_EQ(kept, 9);
  EXPECT_DOUBLE_EQ(g.late_kept_ms(), 3.0);
}

TEST(PrerollGovernorTest, WarmUpLatenessIsNotReportedAsSampled) {
  PrerollGovernor g(5, 5, 0.01);  // already at the maximum: kept, but a warm-up
  EXPECT_TRUE(g.Keep(1.0));
  g.AfterIteration(1.0, false);
  EXPECT_DOUBLE_EQ(g.late_kept_ms(), 0);
  EXPECT_TRUE(g.Keep(0.2));
  g.AfterIteration(0.2, true);
  EXPECT_DOUBLE_EQ(g.late_kept_ms(), 0.2);
}

TEST(PrerollGovernorTest, ACandidateClaimingLatenessForItsSlowSamplesCanDropOnlyAFew) {
  // The attack: a candidate process reports its host as just late enough (11 us) whenever its
  // sample was slow, to have those left out and keep only its fast ones. Every drop grows the
  // pre-roll by at least 0.1 ms, so from 0.5 ms to the 5 ms bound it gets at most
  // ceil(4.5 / 0.122) = 37 drops in the whole evaluation; after that every sample counts.
  PrerollGovernor g(0.5, 5, 0.01);
  int dropped = 0;
  for (int it = 0; it < 1000; ++it) {
    if (!g.Keep(0.011)) ++dropped;
    g.AfterIteration(0.011, true);
  }
  EXPECT_EQ(dropped, 37);
  EXPECT_EQ(g.dropped(), 37u);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 5);
  EXPECT_TRUE(g.Keep(0.011));
}

TEST(PrerollGovernorTest, AHostLateUnderTheLongestPrerollInHalfTheWindowIsHostBound) {
  // Session 13's capped five (RNN loops and the like): the host still launched 1-243 ms after
  // the 5 ms pre-roll ended, in most iterations.
  PrerollGovernor g(0.5, 5, 0.01);
  for (int it = 0; it < 3; ++it) g.AfterIteration(8.0, false);  // warm-ups: not counted
  EXPECT_EQ(g.at_max(), 0u);
  for (int it = 0; it < 19; ++it) g.AfterIteration(it % 2 == 0 ? 8.0 : 0.0, true);
  EXPECT_EQ(g.at_max(), 19u);
  EXPECT_EQ(g.late_at_max(), 10u);
  EXPECT_FALSE(g.HostBound());  // the window is not over yet
  g.AfterIteration(0.0, true);
  EXPECT_TRUE(g.HostBound());  // 10 of 20
}

TEST(PrerollGovernorTest, TheDecisionIsTakenOnceAtTheEndOfTheWindow) {
  // A candidate process reports its own lateness: once the window has said "not host-bound",
  // no lateness reported later (when its samples happen to look fast, say) can stop its
  // sampling; nor can a window that said "host-bound" be undone.
  PrerollGovernor g(5, 5, 0.01);
  for (int it = 0; it < 20; ++it) g.AfterIteration(it < 9 ? 8.0 : 0.0, true);  // 9 of 20
  EXPECT_FALSE(g.HostBound());
  for (int it = 0; it < 100; ++it) g.AfterIteration(8.0, true);
  EXPECT_FALSE(g.HostBound());
  EXPECT_EQ(g.at_max(), 20u);
  PrerollGovernor h(5, 5, 0.01);
  for (int it = 0; it < 20; ++it) h.AfterIteration(8.0, true);
  EXPECT_TRUE(h.HostBound());
  for (int it = 0; it < 100; ++it) h.AfterIteration(0.0, true);
  EXPECT_TRUE(h.HostBound());
}

TEST(PrerollGovernorTest, LatenessOfMicrosecondsDoesNotMakeAProgramHostBound) {
  // Late beyond the pre-roll's 10 us tolerance, but by less than 0.1 ms: the spans hold a few
  // microseconds of gaps, and the stop rule may still converge.
  PrerollGovernor g(5, 5, 0.01);
  for (int it = 0; it < 20; ++it) g.AfterIteration(0.05, true);
  EXPECT_EQ(g.late_at_max(), 0u);
  EXPECT_FALSE(g.HostBound());
}

TEST(PrerollGovernorTest, IterationsBeforeThePrerollReachesItsMaximumDoNotCount) {
  PrerollGovernor g(0.5, 5, 0.01);
  for (int it = 0; it < 30; ++it) g.AfterIteration(0.0, true);  // never late: never grows
  EXPECT_EQ(g.at_max(), 0u);
  EXPECT_FALSE(g.HostBound());
  g.AfterIteration(3.0, true);  // grows to 5 ms in this one; counted from the next
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 5);
  EXPECT_EQ(g.at_max(), 0u);
  for (int it = 0; it < 20; ++it) g.AfterIteration(1.0, true);
  EXPECT_TRUE(g.HostBound());
}

TEST(PrerollGovernorTest, TheStartIsBoundedByTheMaximum) {
  PrerollGovernor g(9, 5, 0.01);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 5);
}

// Shrinking (KFORGE_PREROLL_SHRINK): `window` sampled iterations on time, each noting a
// reference launch of `launch_ms`.
void OnTime(PrerollGovernor* g, int iterations, double launch_ms) {
  for (int it = 0; it < iterations; ++it) {
    g->NoteLaunch(launch_ms, /*reference=*/true);
    EXPECT_TRUE(g->Keep(0));
    g->AfterIteration(0, true);
  }
}

TEST(PrerollGovernorTest, WithoutShrinkingThePrerollOnlyGrows) {
  PrerollGovernor g(0.5, 5, 0.01);
  EXPECT_FALSE(g.Keep(0.5));
  g.AfterIteration(0.5, true);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.6);
  OnTime(&g, 100, 0.2);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.6);
  EXPECT_EQ(g.shrinks(), 0u);
}

TEST(PrerollGovernorTest, ShrinksAfterAWindowOnTimeToOneAndAHalfTheLongestLaunch) {
  PrerollGovernor g(0.5, 5, 0.01);
  g.EnableShrink();
  EXPECT_FALSE(g.Keep(0.5));  // one late outlier: 0.5 -> 1.6 ms
  g.AfterIteration(0.5, true);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.6);
  OnTime(&g, PrerollGovernor::kShrinkWindow - 1, 0.3);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.6);  // not before the window is full
  OnTime(&g, 1, 0.2);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 0.8);  // 1.5 x 0.3 + 0.1 = 0.55, but at most halved
  OnTime(&g, PrerollGovernor::kShrinkWindow, 0.2);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 0.62);  // 0.4, but not below the floor (next test)
  EXPECT_EQ(g.shrinks(), 2u);
  OnTime(&g, PrerollGovernor::kShrinkWindow, 0.01);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 0.62);
  EXPECT_EQ(g.shrinks(), 2u);  // already at the floor: no shrink counted
}

TEST(PrerollGovernorTest, TheFloorIsTheStartRaisedAboveEachPrerollAHostWasLateUnder) {
  PrerollGovernor g(1.0, 5, 0.01);
  g.EnableShrink();
  EXPECT_DOUBLE_EQ(g.floor_ms(), 1.0);
  OnTime(&g, 4 * PrerollGovernor::kShrinkWindow, 0.01);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.0);  // never below the start
  g.AfterIteration(0.5, true);            // late under 1.0 ms: 2.1 ms
  EXPECT_DOUBLE_EQ(g.floor_ms(), 1.12);   // 1.0 + 2 x 0.01 + 0.1
  OnTime(&g, 4 * PrerollGovernor::kShrinkWindow, 0.01);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.12);
  g.AfterIteration(9.0, true);
  EXPECT_DOUBLE_EQ(g.floor_ms(), 1.24);  // by the least a late iteration grows it, not by 18.1
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 5);
}

TEST(PrerollGovernorTest, LateWarmUpsAndLatenessAtTheMaximumLeaveTheFloor) {
  // Session 34's second review: a program's first calls are slow (its warm-ups, up to one per
  // input placement, late by milliseconds), and a single hiccup may come when the pre-roll is
  // at 5 ms. Neither leaves a sample out that would have been kept, and neither may pin the
  // floor high for the phase, which is where shrinking is wanted most.
  PrerollGovernor g(0.5, 5, 0.01);
  g.EnableShrink();
  for (int it = 0; it < 8; ++it) g.AfterIteration(it == 0 ? 3.0 : 0.3, /*sampled=*/false);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 5);
  EXPECT_DOUBLE_EQ(g.floor_ms(), 0.5);
  EXPECT_TRUE(g.Keep(2.0));     // at the maximum: kept, and reported
  g.AfterIteration(2.0, true);  // a hiccup under 5 ms
  EXPECT_DOUBLE_EQ(g.floor_ms(), 0.5);
  OnTime(&g, 10 * PrerollGovernor::kShrinkWindow, 0.2);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 0.5);  // toward 0.4, never below the start
  EXPECT_EQ(g.dropped(), 0u);
}

TEST(PrerollGovernorTest, ALateSampleOrAWarmUpDoesNotCompleteTheWindow) {
  PrerollGovernor g(2, 5, 0.01);
  g.EnableShrink();
  OnTime(&g, PrerollGovernor::kShrinkWindow - 1, 0.2);
  g.NoteLaunch(0.2, /*reference=*/true);
  EXPECT_TRUE(g.Keep(0.005));    // late within the tolerance: on time
  g.AfterIteration(0.05, true);  // but another sample of the iteration was late
  EXPECT_GT(g.preroll_ms(), 2);  // grew, and the window begins again
  const double grown = g.preroll_ms();
  OnTime(&g, PrerollGovernor::kShrinkWindow - 1, 0.2);
  g.AfterIteration(0, false);  // a warm-up does not count
  EXPECT_DOUBLE_EQ(g.preroll_ms(), grown);
  OnTime(&g, 1, 0.2);
  EXPECT_LT(g.preroll_ms(), grown);
}

TEST(PrerollGovernorTest, NoReferenceLaunchNotedNoShrink) {
  // Nothing noted (a reference whose launches were not read), or the candidate's launches
  // alone (its claims): nothing the judge measured says how short the pre-roll may be.
  PrerollGovernor g(0.5, 5, 0.01);
  g.EnableShrink();
  g.AfterIteration(1.0, true);  // 0.5 -> 2.6 ms
  for (int it = 0; it < 100; ++it) g.AfterIteration(0, true);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 2.6);
  for (int it = 0; it < 100; ++it) {
    g.NoteLaunch(0.01, /*reference=*/false);
    g.AfterIteration(0, true);
  }
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 2.6);
  EXPECT_EQ(g.shrinks(), 0u);
}

// The attack shrinking opened (session 33): a candidate claims its next slow sample late
// (11 us, just past the tolerance) whenever a window on time has shrunk the pre-roll, to have
// its slow samples left out again and again. Returns how many of its samples were left out
// over `cycles` windows.
uint32_t DropCyclingAttack(double start_ms, bool shrink, uint32_t cycles) {
  PrerollGovernor g(start_ms, 5, 0.01);
  if (shrink) g.EnableShrink();
  uint32_t dropped = 0;
  for (uint32_t cycle = 0; cycle < cycles; ++cycle) {
    OnTime(&g, PrerollGovernor::kShrinkWindow, 0.2);  // the reference's launches
    if (!g.Keep(0.011)) ++dropped;
    g.AfterIteration(0.011, true);
  }
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 5);  // where no sample can be left out any more
  EXPECT_TRUE(g.Keep(0.011));
  return dropped;
}

TEST(PrerollGovernorTest, WithShrinkingACandidatesDropsAreBoundedAsByGrowthAlone) {
  // Each late iteration raises the floor above the pre-roll it was late under, so the bound
  // growth alone gives holds whatever the start: 1 + (5 - start) / 0.12 (the attack's lateness
  // grows the pre-roll 0.122 a step, the floor rises 0.12: one drop more at most). Session 33's
  // cap of 37 drops matched it only from the 0.5 ms start (from 4.9 ms growth alone allows one).
  for (double start : {0.5, 2.0, 4.0, 4.9}) {
    SCOPED_TRACE(start);
    const uint32_t without = DropCyclingAttack(start, false, 300);
    const uint32_t with = DropCyclingAttack(start, true, 300);
    EXPECT_EQ(without, static_cast<uint32_t>(std::ceil((5 - start) / 0.122)));
    EXPECT_LE(with, 1 + static_cast<uint32_t>((5 - start) / 0.12));
    EXPECT_LE(with, without + 1);
  }
}

TEST(PrerollGovernorTest, ALaunchTailRarerThanTheWindowIsLateOnlyAFewTimes) {
  // Session 34's review: both programs launch in 0.15 ms, and one candidate call in 20 takes
  // 0.9 ms (a collection, an allocator's growth). Every window on time shrank the pre-roll
  // below the tail again; without the floor each shrink made the tail's next sample late, and
  // after session 33's cap those were kept, their host gaps in the candidate's time.
  PrerollGovernor g(0.5, 5, 0.01);
  g.EnableShrink();
  uint32_t late_kept = 0;
  for (int it = 0; it < 2000; ++it) {
    const double reference_late = 0.15 - g.preroll_ms();
    const double candidate_launch = it % 20 == 19 ? 0.9 : 0.15;
    const double candidate_late = candidate_launch - g.preroll_ms();
    g.NoteLaunch(0.15, /*reference=*/true);
    g.NoteLaunch(candidate_launch, /*reference=*/false);
    EXPECT_TRUE(g.Keep(reference_late));
    if (g.Keep(candidate_late) && candidate_late > 0.01) ++late_kept;
    g.AfterIteration(std::max(reference_late, candidate_late), true);
  }
  EXPECT_EQ(late_kept, 0u);
  EXPECT_LE(g.dropped(), 4u);
  EXPECT_GE(g.preroll_ms(), 0.9);
  EXPECT_GT(g.shrinks(), 0u);
}

TEST(PrerollGovernorTest, TheReferencesNeedHoldsWhenItIsTimedInOneIterationOfFour) {
  // A shared reference (reference_share.h) is timed, and its launch noted, in one iteration of
  // four: a window may hold none of its launches. Its last kShrinkWindow launches count, in
  // whatever windows they were noted.
  PrerollGovernor g(0.5, 5, 0.01);
  g.EnableShrink();
  g.AfterIteration(2.0, true);  // 0.5 -> 4.6 ms
  g.NoteLaunch(1.5, /*reference=*/true);
  for (uint32_t it = 0; it < 4 * PrerollGovernor::kShrinkWindow; ++it) {
    g.NoteLaunch(0.01, /*reference=*/false);
    g.AfterIteration(0, true);
  }
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 2.35);           // 1.5 x 1.5 + 0.1
  OnTime(&g, PrerollGovernor::kShrinkWindow, 0.2);  // 16 newer launches of the reference's
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.175);          // toward 0.4, at most halved
}

TEST(PrerollGovernorTest, ACandidatesForgedLaunchTimesCannotShrinkBelowTheReferencesNeed) {
  // The candidate's launch times are its claim (Claim.launch_ms): NaN, negative or zero ones
  // are ignored, so the window's longest launch is the reference's (0.6 ms here); an infinite
  // one only keeps the pre-roll from shrinking, a cost to its own evaluation.
  PrerollGovernor g(0.5, 5, 0.01);
  g.EnableShrink();
  g.AfterIteration(1.0, true);  // one late outlier: 0.5 -> 2.6 ms
  auto window = [&](double forged) {
    for (uint32_t it = 0; it < PrerollGovernor::kShrinkWindow; ++it) {
      g.NoteLaunch(0.6, /*reference=*/true);  // from the judge's stamps
      g.NoteLaunch(forged, /*reference=*/false);
      g.AfterIteration(0, true);
    }
  };
  window(std::nan(""));
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.3);  // toward 1.5 x 0.6 + 0.1 = 1.0, at most halved
  window(std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.3);
  window(-5.0);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.0);
  window(0.0);
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 1.0);  // never below the reference's need
}

TEST(PrerollGovernorTest, AReferenceLaunchNotReadLeavesTheReferencesNeedAsItWas) {
  // A NaN among the reference's last launches would make their largest NaN and the target the
  // candidate's alone (std::max_element); such a launch is not noted.
  PrerollGovernor g(0.5, 5, 0.01);
  g.EnableShrink();
  g.NoteLaunch(1.5, /*reference=*/true);  // its need: 1.5 x 1.5 + 0.1 = 2.35 ms
  g.AfterIteration(3.0, true);            // 0.5 -> 5 ms
  for (uint32_t it = 0; it < 2 * PrerollGovernor::kShrinkWindow; ++it) {
    g.NoteLaunch(std::nan(""), /*reference=*/true);
    g.NoteLaunch(0.01, /*reference=*/false);
    g.AfterIteration(0, true);
  }
  EXPECT_DOUBLE_EQ(g.preroll_ms(), 2.35);  // 5, 2.5, then the need
}

}  // namespace
}  // namespace kforge::eval
