#include "coordinator/result_validation.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

void SetTiming(v1::TimingStats* t, double median) {
  t->set_median_ms(median);
  t->set_mean_ms(median);
  t->set_min_ms(median * 0.9);
  t->set_max_ms(median * 1.1);
  t->set_median_ci_low_ms(median * 0.95);
  t->set_median_ci_high_ms(median * 1.05);
  t->set_n(20);
}

// What the engine sends for a correct candidate twice as fast as the reference by the device
// clock (1.6 times by the call clock, which adds 0.4 ms of host time to both).
v1::EvalResult OkResult() {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_OK);
  SetTiming(r.mutable_reference(), 2.0);
  SetTiming(r.mutable_candidate(), 1.0);
  r.set_speedup(2.0);
  *r.mutable_reference_device() = r.reference();
  *r.mutable_candidate_device() = r.candidate();
  r.set_speedup_device(2.0);
  SetTiming(r.mutable_reference_call(), 2.4);
  SetTiming(r.mutable_candidate_call(), 1.5);
  r.set_speedup_call(1.6);
  r.set_speedup_clock("device");
  r.set_speedup_ci_low(0.95 * 2.0 / 1.05);
  r.set_speedup_ci_high(1.05 * 2.0 / 0.95);
  r.set_speedup_device_ci_low(r.speedup_ci_low());
  r.set_speedup_device_ci_high(r.speedup_ci_high());
  r.set_speedup_device_between_sd(0.01);
  r.set_speedup_call_ci_low(1.2);
  r.set_speedup_call_ci_high(2.1);
  r.set_speedup_call_between_sd(0.12);
  r.mutable_correctness()->set_trials(5);
  r.mutable_correctness()->set_trials_passed(5);
  r.mutable_stages()->set_total_s(3.5);
  return r;
}

TEST(ResultValidationTest, AcceptsTheEnginesResults) {
  EXPECT_TRUE(ValidateResult(OkResult()).ok());
  v1::EvalResult wrong;
  wrong.set_verdict(v1::VERDICT_INCORRECT);
  wrong.set_reason("output 0 differs");
  wrong.mutable_correctness()->set_trials(1);
  wrong.mutable_correctness()->set_max_abs_error(std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(ValidateResult(wrong).ok()) << ValidateResult(wrong);
}

TEST(ResultValidationTest, RefusesASpeedupWithoutOk) {
  v1::EvalResult r = OkResult();
  r.set_verdict(v1::VERDICT_INCORRECT);
  EXPECT_EQ(ValidateResult(r), absl::InvalidArgumentError(
                                   "malformed result: speedup is set; only an ok result has a "
                                   "speedup"));
  r = OkResult();
  r.clear_speedup();
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup is missing; an ok result has one");
}

TEST(ResultValidationTest, RefusesNanInfiniteAndNegativeNumbers) {
  v1::EvalResult r = OkResult();
  r.set_speedup(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup is nan; it must be finite and positive");
  r = OkResult();
  r.set_speedup(-2);
  EXPECT_EQ(ValidateResult(r).code(), absl::StatusCode::kInvalidArgument);
  r = OkResult();
  r.mutable_candidate()->set_median_ms(std::numeric_limits<double>::infinity());
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: candidate.median_ms is inf; it must be finite");
  r = OkResult();
  r.mutable_reference()->add_samples_ms(-1);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: reference.samples_ms[0] is -1; it must not be negative");
  r = OkResult();
  r.mutable_stages()->set_build_s(-3);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: stages.build_s is -3; it must not be negative");
  // A worker's forged stage times: a part larger than the stage it was measured in (the first
  // trial's part of all trials, the reference's trace flushes of the device clock's phase).
  for (const auto& [part, whole] : {std::pair<const char*, const char*>{
                                        "correctness_first_candidate_s", "correctness_candidate_s"},
                                    {"timing_trace_s", "timing_device_s"}}) {
    r = OkResult();
    const google::protobuf::Descriptor* d = r.stages().GetDescriptor();
    const google::protobuf::Reflection* refl = r.stages().GetReflection();
    refl->SetDouble(r.mutable_stages(), d->FindFieldByName(whole), 0.2);
    refl->SetDouble(r.mutable_stages(), d->FindFieldByName(part), 0.2);
    EXPECT_TRUE(ValidateResult(r).ok()) << part;
    refl->SetDouble(r.mutable_stages(), d->FindFieldByName(part), 0.5);
    EXPECT_EQ(ValidateResult(r).message(),
              absl::StrCat("malformed result: stages.", part, " is 0.5, more than ", whole,
                           " (0.2), of which it is a part"));
  }
}

TEST(ResultValidationTest, RefusesASpeedupTheTimingsDoNotGive) {
  v1::EvalResult r = OkResult();
  r.set_speedup(1000);  // the rogue worker's forgery: 2 ms / 1 ms is 2
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup is 1000 but reference median / candidate median is 2");
  r = OkResult();
  r.mutable_candidate()->set_n(0);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: candidate.n is 0; an ok result has timed both programs");
}

// The call clock's pair in `reference` and `candidate`: what a task with speedup_clock "call"
// gets, and what a candidate whose process reached native code gets (no device speedup).
// What the engine sends where the device clock was not trusted: none of its speedup's fields.
void DropDeviceClock(v1::EvalResult* r) {
  r->clear_speedup_device();
  r->clear_candidate_device();
  r->clear_speedup_device_ci_low();
  r->clear_speedup_device_ci_high();
  r->clear_speedup_device_between_sd();
}

v1::EvalResult CallClockResult() {
  v1::EvalResult r = OkResult();
  *r.mutable_reference() = r.reference_call();
  *r.mutable_candidate() = r.candidate_call();
  r.set_speedup(1.6);
  r.set_speedup_clock("call");
  r.set_speedup_ci_low(1.5);
  r.set_speedup_ci_high(1.7);
  return r;
}

TEST(ResultValidationTest, AcceptsEitherClockAndAnUntrustedDeviceClock) {
  EXPECT_TRUE(ValidateResult(CallClockResult()).ok()) << ValidateResult(CallClockResult());
  v1::EvalResult r = CallClockResult();
  DropDeviceClock(&r);
  r.set_native_code(true);
  r.set_native_code_detail("ctypes.CDLL");
  r.set_device_clock_note("the candidate process reached native code");
  EXPECT_TRUE(ValidateResult(r).ok()) << ValidateResult(r);
  r.clear_speedup_ci_low();  // no interval
  r.clear_speedup_ci_high();
  EXPECT_TRUE(ValidateResult(r).ok()) << ValidateResult(r);
  // A failed evaluation names the clock it would have used, and nothing else of the clocks.
  v1::EvalResult wrong;
  wrong.set_verdict(v1::VERDICT_INCORRECT);
  wrong.set_speedup_clock("device");
  EXPECT_TRUE(ValidateResult(wrong).ok()) << ValidateResult(wrong);
}

TEST(ResultValidationTest, RefusesAClockSpeedupWithoutOk) {
  v1::EvalResult r = OkResult();
  r.set_verdict(v1::VERDICT_RUNTIME_ERROR);
  r.clear_speedup();
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_device is set; only an ok result has a speedup");
  DropDeviceClock(&r);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_call is set; only an ok result has a speedup");
  r.clear_speedup_call();
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_call_ci_low is set without speedup_call");
  r.clear_speedup_call_ci_low();
  r.clear_speedup_call_ci_high();
  r.clear_speedup_call_between_sd();
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_ci_low is set; only an ok result has a speedup");
}

TEST(ResultValidationTest, BoundsTheDeviceBusyTimes) {
  v1::EvalResult r = OkResult();
  r.set_reference_device_busy_ms(1.9);
  r.set_candidate_device_busy_ms(0.9);
  r.set_speedup_device_busy(1.9 / 0.9);
  EXPECT_TRUE(ValidateResult(r).ok()) << ValidateResult(r);
  v1::EvalResult bad = r;
  bad.set_speedup_device_busy(-1);
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_device_busy is -1; it must not be negative");
  bad = r;
  bad.set_candidate_device_busy_ms(std::numeric_limits<double>::infinity());
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: candidate_device_busy_ms is inf; it must be finite");
  bad = CallClockResult();
  DropDeviceClock(&bad);
  bad.set_reference_device_busy_ms(1.9);
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: reference_device_busy_ms is set; only an ok result with a device "
            "clock has one");
  bad = r;
  bad.set_speedup_device_busy(5.0);  // 1.9 / 0.9 is 2.11
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_device_busy is 5 but reference_device_busy_ms / "
            "candidate_device_busy_ms is 2.11111");
  bad = r;
  bad.clear_candidate_device_busy_ms();
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_device_busy and the two busy times are set together or "
            "not at all");
  // An ok turned into a failure by the post-timing check keeps none of them (the engine
  // clears them with the speedups).
  bad = v1::EvalResult();
  bad.set_verdict(v1::VERDICT_INCORRECT);
  bad.set_speedup_device_busy(2.0);
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_device_busy is set; only an ok result with a device clock "
            "has one");
}

TEST(ResultValidationTest, BoundsTheDeviceSpansLikeTheBusyTimes) {
  v1::EvalResult r = OkResult();
  r.set_reference_device_span_ms(2.4);
  r.set_candidate_device_span_ms(1.2);
  r.set_speedup_device_span(2.0);
  EXPECT_TRUE(ValidateResult(r).ok()) << ValidateResult(r);
  v1::EvalResult bad = r;
  bad.set_speedup_device_span(2.5);
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_device_span is 2.5 but reference_device_span_ms / "
            "candidate_device_span_ms is 2");
  bad = r;
  bad.clear_reference_device_span_ms();
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_device_span and the two spans are set together or not "
            "at all");
  bad = r;
  bad.set_reference_device_span_ms(-2.4);
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: reference_device_span_ms is -2.4; it must not be negative");
  bad = CallClockResult();
  DropDeviceClock(&bad);
  bad.set_speedup_device_span(2.0);
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_device_span is set; only an ok result with a device "
            "clock has one");
}

TEST(ResultValidationTest, BoundsTheReferenceTimedAlone) {
  v1::EvalResult r = OkResult();
  r.set_reference_alone_call_ms(2.3);
  r.set_reference_alone_device_ms(1.9);
  EXPECT_TRUE(ValidateResult(r).ok()) << ValidateResult(r);
  v1::EvalResult bad = r;
  bad.set_reference_alone_call_ms(std::nan(""));
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: reference_alone_call_ms is nan; it must be finite");
  bad = CallClockResult();
  DropDeviceClock(&bad);
  bad.set_reference_alone_device_ms(1.9);
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: reference_alone_device_ms is set; only an ok result with that "
            "clock has one");
  v1::EvalResult wrong;
  wrong.set_verdict(v1::VERDICT_INCORRECT);
  wrong.mutable_correctness()->set_trials(1);
  wrong.set_reference_alone_call_ms(2.3);
  EXPECT_EQ(ValidateResult(wrong).message(),
            "malformed result: reference_alone_call_ms is set; only an ok result with that "
            "clock has one");
}

TEST(ResultValidationTest, BoundsEachClocksIntervalAndBetweenProcessSpread) {
  v1::EvalResult bad = OkResult();
  bad.set_speedup_call_ci_low(1.7);  // above speedup_call (1.6)
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_call is 1.6, outside its confidence interval [1.7, 2.1]");
  bad = OkResult();
  bad.set_speedup_device_between_sd(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_device_between_sd is nan; it must be finite");
  bad = OkResult();
  bad.set_speedup_call_between_sd(3);
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_call_between_sd is 3; it must be below 1");
  // A clock without its speedup (the device clock not trusted) has no interval either.
  bad = CallClockResult();
  bad.clear_speedup_device();
  bad.clear_candidate_device();
  EXPECT_EQ(ValidateResult(bad).message(),
            "malformed result: speedup_device_ci_low is set without speedup_device");
}

TEST(ResultValidationTest, RefusesAnOkWithoutItsClock) {
  v1::EvalResult r = OkResult();
  r.clear_speedup_clock();
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_clock is missing; an ok result names its clock");
  r.set_speedup_clock("wall");
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_clock is 'wall'; it must be device or call");
  r = OkResult();
  DropDeviceClock(&r);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_device is missing; speedup_clock names it, so an ok "
            "result has it");
  r = CallClockResult();
  r.clear_speedup_call();
  r.clear_speedup_call_ci_low();
  r.clear_speedup_call_ci_high();
  r.clear_speedup_call_between_sd();
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_call is missing; speedup_clock names it, so an ok result "
            "has it");
}

TEST(ResultValidationTest, RefusesClockSpeedupsTheirTimingsDoNotGive) {
  v1::EvalResult r = OkResult();
  r.set_speedup_call(50);  // 2.4 ms / 1.5 ms is 1.6
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_call is 50 but reference median / candidate median is "
            "1.6");
  r = OkResult();
  r.set_speedup_device(std::numeric_limits<double>::infinity());
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_device is inf; it must be finite and positive");
  r = OkResult();
  r.set_speedup_call(-1.6);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_call is -1.6; it must be finite and positive");
  r = OkResult();
  r.mutable_candidate_call()->set_n(0);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: candidate_call.n is 0; an ok result has timed both programs");
  // `speedup` must be the named clock's: here the device pair was copied, the call's named.
  r = OkResult();
  r.set_speedup_clock("call");
  EXPECT_EQ(ValidateResult(r).message(), "malformed result: speedup is 2 but speedup_call is 1.6");
}

TEST(ResultValidationTest, RefusesAnIntervalThatMissesItsValue) {
  v1::EvalResult r = OkResult();
  r.set_speedup_ci_low(2.5);
  r.set_speedup_ci_high(3);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup is 2, outside its confidence interval [2.5, 3]");
  r.set_speedup_ci_low(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_ci_low is nan; it must be finite");
  r = OkResult();
  r.mutable_reference_call()->set_median_ci_high_ms(2);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: reference_call.median_ms is 2.4, outside its confidence "
            "interval [2.28, 2]");
  r = OkResult();
  r.mutable_candidate()->set_median_ci_low_ms(-1);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: candidate.median_ci_low_ms is -1; it must not be negative");
}

TEST(ResultValidationTest, RefusesAnOkThatFailedTrials) {
  v1::EvalResult r = OkResult();
  r.mutable_correctness()->set_trials_passed(4);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: correctness passed 4 of 5 trials; an ok result passes every "
            "trial");
  r.mutable_correctness()->set_trials_passed(6);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: correctness.trials_passed is 6, more than the 5 trials");
}

TEST(ResultValidationTest, RefusesUnknownVerdicts) {
  v1::EvalResult r;
  EXPECT_EQ(ValidateResult(r).code(), absl::StatusCode::kInvalidArgument);
  r.set_verdict(static_cast<v1::Verdict>(77));
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: verdict is 77; it must be one of ok, compile_error, "
            "runtime_error, incorrect, timeout, rejected");
}

TEST(ResultValidationTest, BoundsSizes) {
  ResultLimits limits;
  limits.max_samples = 3;
  limits.max_log_bytes = 10;
  v1::EvalResult r = OkResult();
  for (int i = 0; i < 4; ++i) r.mutable_reference()->add_samples_ms(1);
  EXPECT_EQ(ValidateResult(r, limits).message(),
            "malformed result: reference.samples_ms has 4 samples; the limit is 3");
  r = OkResult();
  r.set_compiler_log(std::string(11, 'x'));
  EXPECT_EQ(ValidateResult(r, limits).message(),
            "malformed result: compiler_log is 11 bytes; the limit is 10");
  r = OkResult();
  for (int i = 0; i < 4; ++i) r.mutable_candidate_device()->add_span_samples_ms(1);
  EXPECT_EQ(ValidateResult(r, limits).message(),
            "malformed result: candidate_device.span_samples_ms has 4 samples; the limit is 3");
  limits.max_reason_bytes = 10;
  r = OkResult();
  r.set_native_code_detail(std::string(11, 'x'));
  EXPECT_EQ(ValidateResult(r, limits).message(),
            "malformed result: native_code_detail is 11 bytes; the limit is 10");
  r = OkResult();
  r.set_strict_reason(std::string(11, 'x'));
  EXPECT_EQ(ValidateResult(r, limits).message(),
            "malformed result: strict_reason is 11 bytes; the limit is 10");
  limits.max_result_bytes = 16;
  EXPECT_EQ(ValidateResult(OkResult(), limits).code(), absl::StatusCode::kInvalidArgument);
}

// Red team, session 29: a NUL byte in any string of a result passed validation, then
// PostgreSQL's jsonb refused it (22P05) and the lease was never answered. Every string, at
// any depth, must be what PostgreSQL can store.
TEST(ResultValidationTest, RefusesNulAndInvalidUtf8InEveryStringAtAnyDepth) {
  const std::string nul("bad\0byte", 8);
  v1::EvalResult r = OkResult();
  r.set_reason(nul);
  EXPECT_EQ(ValidateResult(r).message(), "malformed result: reason contains a NUL byte (byte 3)");
  r = OkResult();
  r.set_compiler_log("fine\n" + nul);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: compiler_log contains a NUL byte (byte 8)");
  r = OkResult();
  r.set_output_log(nul);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: output_log contains a NUL byte (byte 3)");
  r = OkResult();
  r.mutable_system()->set_hostname(nul);
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: system.hostname contains a NUL byte (byte 3)");
  r = OkResult();
  r.set_speedup_clock(std::string("device\0", 7));
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: speedup_clock contains a NUL byte (byte 6)");
  // Protobuf's parser refuses invalid UTF-8 in a string field of a message off the wire; a
  // result built in memory (or by another parser) is checked all the same.
  r = OkResult();
  r.mutable_system()->set_gpu_name("caf\xc3");
  EXPECT_EQ(ValidateResult(r).message(),
            "malformed result: system.gpu_name is not valid UTF-8 (byte 3)");
  r = OkResult();
  r.set_reason("caf\xc3\xa9, \xe2\x9c\x93 and a tab\t");
  EXPECT_TRUE(ValidateResult(r).ok()) << ValidateResult(r);
}

}  // namespace
}  // namespace kforge
