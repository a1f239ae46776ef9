#include "gpu_worker/eval/call_profile.h"

#include <gtest/gtest.h>

namespace kforge::eval {
namespace {

TEST(CallProfileTest, MediansPerKindAndTheTimeOutsideTheCandidate) {
  CallProfile p;
  EXPECT_EQ(p.Summary(), "");
  p.Add(CallKind::kNull, 2, 300, {1, 10, 50, 51, 60, 100});
  p.Add(CallKind::kNull, 4, 340, {1, 12, 52, 53, 62, 140});
  p.Add(CallKind::kNull, 3, 320, {1, 11, 51, 52, 61, 120});
  p.Add(CallKind::kCall, 5, 900, {2, 500});  // ended after its forward (a mismatch, say)
  p.Add(CallKind::kTraced, 6, 1800, {1, 1500, 1600, 1601, 1610, 1620});
  EXPECT_EQ(p.Summary(),
            "kforge-call-profile {\"kind\": \"null\", \"calls\": 3, \"send_us\": 3.0, "
            "\"roundtrip_us\": 320.0, \"candidate_us\": {\"args\": 1.0, \"forward\": 11.0, "
            "\"sync\": 51.0, \"rules\": 52.0, \"copy\": 61.0, \"sync2\": 120.0}, "
            "\"outside_candidate_us\": 200.0}\n"
            "kforge-call-profile {\"kind\": \"traced\", \"calls\": 1, \"send_us\": 6.0, "
            "\"roundtrip_us\": 1800.0, \"candidate_us\": {\"args\": 1.0, \"forward\": 1500.0, "
            "\"sync\": 1600.0, \"rules\": 1601.0, \"copy\": 1610.0, \"sync2\": 1620.0}, "
            "\"outside_candidate_us\": 180.0}\n"
            "kforge-call-profile {\"kind\": \"call\", \"calls\": 1, \"send_us\": 5.0, "
            "\"roundtrip_us\": 900.0, \"candidate_us\": {\"args\": 2.0, \"forward\": 500.0}, "
            "\"outside_candidate_us\": 400.0}\n");
}

TEST(CallProfileTest, TheReferencesSamplesInTheJudgeHaveALineOfTheirOwn) {
  CallProfile p;
  p.AddReference(40, 55);
  p.AddReference(60, 80);
  p.AddReference(50, 70);
  EXPECT_EQ(p.Summary(),
            "kforge-call-profile {\"kind\": \"reference\", \"calls\": 3, \"judge_us\": "
            "{\"forward\": 50.0, \"slots\": 70.0}}\n");
}

TEST(CallProfileTest, TheReferencesDeviceSamplesGiveEachStepsMedian) {
  CallProfile p;
  p.AddReferenceDevice({10, 300, 400, 450, 2000, 2010, 2300});
  p.AddReferenceDevice({30, 500, 600, 650, 2400, 2420, 2900});
  p.AddReferenceDevice({20, 400, 500, 550, 2200, 2210, 2500});
  p.AddReferenceDevice({25, 450});  // fewer stamps (defensive: a faulting sample throws first)
  EXPECT_EQ(p.Summary(),
            "kforge-call-profile {\"kind\": \"reference_device\", \"samples\": 4, "
            "\"judge_us\": {\"drain\": 22.5, \"discard\": 425.0, \"preroll\": 500.0, "
            "\"launch\": 550.0, \"wait\": 2200.0, \"drain2\": 2210.0, \"collect\": 2500.0}}\n");
  p.AddReference(40, 55);  // the call clock's line comes first
  EXPECT_EQ(p.Summary().rfind("kforge-call-profile {\"kind\": \"reference\", ", 0), 0u);
}

}  // namespace
}  // namespace kforge::eval
