#include "coordinator/result_validation.h"

#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/utf8.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/repeated_field.h"

namespace kforge {
namespace {

// EvalResult.speedup_*_between_sd: the engine's is at most 0.5 (a factor of 1.65).
constexpr double kMaxBetweenSd = 1;

absl::Status Bad(const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("malformed result: ", field, " ", why));
}

// Durations, times and counts: finite and not negative.
absl::Status CheckNonNegative(const std::string& field, double v) {
  if (!std::isfinite(v)) return Bad(field, absl::StrCat("is ", v, "; it must be finite"));
  if (v < 0) return Bad(field, absl::StrCat("is ", v, "; it must not be negative"));
  return absl::OkStatus();
}

// The confidence interval of the value named <name><unit>, whose ends are <name>_ci_low<unit>
// and <name>_ci_high<unit>: both 0 (none), or finite with 0 <= low <= value <= high.
absl::Status CheckInterval(const std::string& name, const char* unit, double value, double low,
                           double high) {
  if (low == 0 && high == 0) return absl::OkStatus();
  for (const auto& [end, v] :
       {std::pair<const char*, double>{"_ci_low", low}, {"_ci_high", high}}) {
    if (absl::Status s = CheckNonNegative(absl::StrCat(name, end, unit), v); !s.ok()) return s;
  }
  if (!(low <= value && value <= high)) {
    return Bad(name + unit, absl::StrCat("is ", value, ", outside its confidence interval [", low,
                                         ", ", high, "]"));
  }
  return absl::OkStatus();
}

absl::Status CheckSamples(const std::string& field,
                          const google::protobuf::RepeatedField<double>& samples,
                          const ResultLimits& limits) {
  if (samples.size() > limits.max_samples) {
    return Bad(field, absl::StrCat("has ", samples.size(), " samples; the limit is ",
                                   limits.max_samples));
  }
  for (int i = 0; i < samples.size(); ++i) {
    if (absl::Status s = CheckNonNegative(absl::StrCat(field, "[", i, "]"), samples[i]); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTiming(const std::string& name, const v1::TimingStats& t, bool timed,
                         const ResultLimits& limits) {
  const std::pair<const char*, double> stats[] = {{"median_ms", t.median_ms()},
                                                  {"mean_ms", t.mean_ms()},
                                                  {"min_ms", t.min_ms()},
                                                  {"max_ms", t.max_ms()},
                                                  {"std_ms", t.std_ms()}};
  for (const auto& [field, v] : stats) {
    if (absl::Status s = CheckNonNegative(absl::StrCat(name, ".", field), v); !s.ok()) return s;
  }
  if (absl::Status s = CheckInterval(name + ".median", "_ms", t.median_ms(), t.median_ci_low_ms(),
                                     t.median_ci_high_ms());
      !s.ok()) {
    return s;
  }
  const std::pair<const char*, const google::protobuf::RepeatedField<double>*> series[] = {
      {"samples_ms", &t.samples_ms()},           {"tail_samples_ms", &t.tail_samples_ms()},
      {"event_samples_ms", &t.event_samples_ms()}, {"pre_samples_ms", &t.pre_samples_ms()},
      {"lat_samples_ms", &t.lat_samples_ms()},   {"span_samples_ms", &t.span_samples_ms()},
      {"host_samples_ms", &t.host_samples_ms()}};
  for (const auto& [field, v] : series) {
    if (absl::Status s = CheckSamples(absl::StrCat(name, ".", field), *v, limits); !s.ok()) {
      return s;
    }
  }
  if (timed) {
    if (t.n() == 0) return Bad(name + ".n", "is 0; an ok result has timed both programs");
    if (t.median_ms() <= 0) {
      return Bad(name + ".median_ms", "is 0; a timed program takes positive time");
    }
    if (t.min_ms() > t.median_ms() || t.median_ms() > t.max_ms()) {
      return Bad(name, absl::StrCat("has median ", t.median_ms(), " outside [min ", t.min_ms(),
                                    ", max ", t.max_ms(), "]"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckCorrectness(const v1::CorrectnessReport& c, bool ok) {
  if (c.trials_passed() > c.trials()) {
    return Bad("correctness.trials_passed",
               absl::StrCat("is ", c.trials_passed(), ", more than the ", c.trials(), " trials"));
  }
  for (const auto& [field, v] :
       {std::pair<const char*, double>{"atol", c.atol()}, {"rtol", c.rtol()}}) {
    if (absl::Status s = CheckNonNegative(absl::StrCat("correctness.", field), v); !s.ok()) return s;
  }
  // A wrong candidate may produce NaN or infinite errors; a correct one cannot.
  const std::pair<const char*, double> errors[] = {{"max_abs_error", c.max_abs_error()},
                                                   {"max_rel_error", c.max_rel_error()},
                                                   {"whole_rel_error", c.whole_rel_error()}};
  for (const auto& [field, v] : errors) {
    if (ok) {
      if (absl::Status s = CheckNonNegative(absl::StrCat("correctness.", field), v); !s.ok()) {
        return s;
      }
    } else if (v < 0) {
      return Bad(absl::StrCat("correctness.", field), "must not be negative");
    }
  }
  if (ok && (c.trials() == 0 || c.trials_passed() != c.trials())) {
    return Bad("correctness", absl::StrCat("passed ", c.trials_passed(), " of ", c.trials(),
                                           " trials; an ok result passes every trial"));
  }
  return absl::OkStatus();
}

// `speedup` (named `field`) must be reference median / candidate median, the two timed.
absl::Status CheckRatio(const std::string& field, double speedup, const v1::TimingStats& ref,
                        const v1::TimingStats& cand, const ResultLimits& limits) {
  if (!std::isfinite(speedup) || speedup <= 0) {
    return Bad(field, absl::StrCat("is ", speedup, "; it must be finite and positive"));
  }
  const double expected = ref.median_ms() / cand.median_ms();
  if (std::abs(speedup - expected) > limits.speedup_rel_tolerance * expected) {
    return Bad(field, absl::StrCat("is ", speedup, " but reference median / candidate median is ",
                                   expected));
  }
  return absl::OkStatus();
}

// The two clocks (EvalResult fields 22-31, 39-44): each clock's speedup, interval and
// between-process deviation only with its speedup, which only an ok result has, and then its
// pair of timings, timed, giving it; the interval holds the clock's speedup and the deviation
// is below kMaxBetweenSd; `speedup_clock` names one of the clocks, whose speedup is `speedup`;
// the interval, when there is one, holds `speedup`.
absl::Status CheckClocks(const v1::EvalResult& r, bool ok, const ResultLimits& limits) {
  struct Clock {
    const char* name;
    bool has;
    double speedup;
    const v1::TimingStats& ref;
    const v1::TimingStats& cand;
    double ci_low, ci_high, between_sd;
  };
  const Clock clocks[] = {
      {"device", r.has_speedup_device(), r.speedup_device(), r.reference_device(),
       r.candidate_device(), r.speedup_device_ci_low(), r.speedup_device_ci_high(),
       r.speedup_device_between_sd()},
      {"call", r.has_speedup_call(), r.speedup_call(), r.reference_call(), r.candidate_call(),
       r.speedup_call_ci_low(), r.speedup_call_ci_high(), r.speedup_call_between_sd()}};
  for (const Clock& c : clocks) {
    const std::string field = absl::StrCat("speedup_", c.name);
    if (c.has && !ok) return Bad(field, "is set; only an ok result has a speedup");
    for (const auto& [suffix, v] : {std::pair<const char*, double>{"_ci_low", c.ci_low},
                                    {"_ci_high", c.ci_high},
                                    {"_between_sd", c.between_sd}}) {
      if (absl::Status s = CheckNonNegative(field + suffix, v); !s.ok()) return s;
      if (v != 0 && !c.has) return Bad(field + suffix, "is set without " + field);
    }
    if (c.between_sd >= kMaxBetweenSd) {
      return Bad(field + "_between_sd",
                 absl::StrCat("is ", c.between_sd, "; it must be below ", kMaxBetweenSd));
    }
    for (const auto& [side, t] :
         {std::pair<const char*, const v1::TimingStats*>{"reference_", &c.ref},
          {"candidate_", &c.cand}}) {
      if (absl::Status s = CheckTiming(side + std::string(c.name), *t, c.has, limits); !s.ok()) {
        return s;
      }
    }
    if (c.has) {
      if (absl::Status s = CheckRatio(field, c.speedup, c.ref, c.cand, limits); !s.ok()) return s;
      if (absl::Status s = CheckInterval(field, "", c.speedup, c.ci_low, c.ci_high); !s.ok()) {
        return s;
      }
    }
  }
  const std::string& clock = r.speedup_clock();
  if (!clock.empty() && clock != "device" && clock != "call") {
    return Bad("speedup_clock",
               absl::StrCat("is '", clock.substr(0, 64), "'; it must be device or call"));
  }
  for (const auto& [field, text] :
       {std::pair<const char*, const std::string*>{"device_clock_note", &r.device_clock_note()},
        {"native_code_detail", &r.native_code_detail()},
        {"strict_rule", &r.strict_rule()},
        {"strict_reason", &r.strict_reason()}}) {
    if (text->size() > limits.max_reason_bytes) {
      return Bad(field, absl::StrCat("is ", text->size(), " bytes; the limit is ",
                                     limits.max_reason_bytes));
    }
  }
  // The busy times (fields 36-38) and spans (47-49) beside the device clock: finite, not
  // negative, only with an ok result that has a device clock, and each triple whole and
  // consistent.
  struct Beside {
    const char *reference, *candidate, *speedup, *what;
    double r, c, ratio;
  };
  for (const Beside& b : {Beside{"reference_device_busy_ms", "candidate_device_busy_ms",
                                 "speedup_device_busy", "busy times", r.reference_device_busy_ms(),
                                 r.candidate_device_busy_ms(), r.speedup_device_busy()},
                          Beside{"reference_device_span_ms", "candidate_device_span_ms",
                                 "speedup_device_span", "spans", r.reference_device_span_ms(),
                                 r.candidate_device_span_ms(), r.speedup_device_span()}}) {
    for (const auto& [field, v] : {std::pair<const char*, double>{b.reference, b.r},
                                   {b.candidate, b.c},
                                   {b.speedup, b.ratio}}) {
      if (absl::Status s = CheckNonNegative(field, v); !s.ok()) return s;
      if (v != 0 && !(ok && r.has_speedup_device())) {
        return Bad(field, "is set; only an ok result with a device clock has one");
      }
    }
    const int set = (b.r != 0) + (b.c != 0) + (b.ratio != 0);
    if (set != 0 && set != 3) {
      return Bad(b.speedup,
                 absl::StrCat("and the two ", b.what, " are set together or not at all"));
    }
    if (set == 3) {
      const double expected = b.r / b.c;
      if (std::abs(b.ratio - expected) > limits.speedup_rel_tolerance * expected) {
        return Bad(b.speedup, absl::StrCat("is ", b.ratio, " but ", b.reference, " / ", b.candidate,
                                           " is ", expected));
      }
    }
  }
  // The reference's medians timed alone (fields 51-52): finite, not negative, and only with an
  // ok result that has that clock.
  struct Alone {
    const char* field;
    double ms;
    bool clock;
  };
  for (const Alone& a :
       {Alone{"reference_alone_call_ms", r.reference_alone_call_ms(), ok && r.has_speedup_call()},
        Alone{"reference_alone_device_ms", r.reference_alone_device_ms(),
              ok && r.has_speedup_device()}}) {
    if (absl::Status s = CheckNonNegative(a.field, a.ms); !s.ok()) return s;
    if (a.ms != 0 && !a.clock) {
      return Bad(a.field, "is set; only an ok result with that clock has one");
    }
  }
  const bool interval = r.speedup_ci_low() != 0 || r.speedup_ci_high() != 0;
  if (!ok) {
    if (interval) return Bad("speedup_ci_low", "is set; only an ok result has a speedup");
    return absl::OkStatus();
  }
  if (clock.empty()) return Bad("speedup_clock", "is missing; an ok result names its clock");
  const Clock& named = clock == "device" ? clocks[0] : clocks[1];
  if (!named.has) {
    return Bad(absl::StrCat("speedup_", clock),
               "is missing; speedup_clock names it, so an ok result has it");
  }
  if (std::abs(r.speedup() - named.speedup) > limits.speedup_rel_tolerance * named.speedup) {
    return Bad("speedup",
               absl::StrCat("is ", r.speedup(), " but speedup_", clock, " is ", named.speedup));
  }
  return CheckInterval("speedup", "", r.speedup(), r.speedup_ci_low(), r.speedup_ci_high());
}

// Every string field of `m` at any depth (repeated and map entries included), named by its
// path from the result ("reason", "system.gpu_name", "x[2].key"): PostgreSQL keeps results
// as text and jsonb, which hold neither NUL (jsonb refuses \u0000: SQLSTATE 22P05) nor
// invalid UTF-8, and a result the database refuses could never be stored.
absl::Status CheckStrings(const google::protobuf::Message& m, const std::string& path) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* refl = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  refl->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const std::string name = path.empty() ? f->name() : absl::StrCat(path, ".", f->name());
    const int n = f->is_repeated() ? refl->FieldSize(m, f) : 1;
    for (int i = 0; i < n; ++i) {
      const std::string at = f->is_repeated() ? absl::StrCat(name, "[", i, "]") : name;
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const google::protobuf::Message& sub =
            f->is_repeated() ? refl->GetRepeatedMessage(m, f, i) : refl->GetMessage(m, f);
        if (absl::Status s = CheckStrings(sub, at); !s.ok()) return s;
      } else if (f->type() == FieldDescriptor::TYPE_STRING) {
        std::string scratch;
        const std::string& text = f->is_repeated()
                                      ? refl->GetRepeatedStringReference(m, f, i, &scratch)
                                      : refl->GetStringReference(m, f, &scratch);
        if (size_t nul = text.find('\0'); nul != std::string::npos) {
          return Bad(at, absl::StrCat("contains a NUL byte (byte ", nul, ")"));
        }
        if (std::optional<size_t> bad = FirstInvalidUtf8(text)) {
          return Bad(at, absl::StrCat("is not valid UTF-8 (byte ", *bad, ")"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckStages(const v1::StageDurations& st) {
  const google::protobuf::Reflection* refl = st.GetReflection();
  const google::protobuf::Descriptor* desc = st.GetDescriptor();
  for (int i = 0; i < desc->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = desc->field(i);
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) continue;
    if (absl::Status s = CheckNonNegative("stages." + f->name(), refl->GetDouble(st, f));
        !s.ok()) {
      return s;
    }
  }
  // Stage times measured inside another (engine.cc): the first trial's part of each program's
  // trial time, the reference's trace flushes within the device clock's phase.
  for (const auto& [part_name, part, whole_name, whole] :
       {std::tuple<const char*, double, const char*, double>{
            "correctness_first_reference_s", st.correctness_first_reference_s(),
            "correctness_reference_s", st.correctness_reference_s()},
        {"correctness_first_candidate_s", st.correctness_first_candidate_s(),
         "correctness_candidate_s", st.correctness_candidate_s()},
        {"timing_trace_s", st.timing_trace_s(), "timing_device_s", st.timing_device_s()}}) {
    if (part > whole) {
      return Bad(absl::StrCat("stages.", part_name),
                 absl::StrCat("is ", part, ", more than ", whole_name, " (", whole,
                              "), of which it is a part"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateResult(const v1::EvalResult& r, const ResultLimits& limits) {
  if (size_t bytes = r.ByteSizeLong(); bytes > limits.max_result_bytes) {
    return Bad("", absl::StrCat("is ", bytes, " bytes; the limit is ", limits.max_result_bytes));
  }
  // Before anything that quotes a string of the result in its message.
  if (absl::Status s = CheckStrings(r, ""); !s.ok()) return s;
  if (r.verdict() == v1::VERDICT_UNSPECIFIED || !v1::Verdict_IsValid(r.verdict())) {
    return Bad("verdict", absl::StrCat("is ", static_cast<int>(r.verdict()),
                                       "; it must be one of ok, compile_error, runtime_error, "
                                       "incorrect, timeout, rejected"));
  }
  if (r.reason().size() > limits.max_reason_bytes) {
    return Bad("reason", absl::StrCat("is ", r.reason().size(), " bytes; the limit is ",
                                      limits.max_reason_bytes));
  }
  for (const auto& [field, text] : {std::pair<const char*, const std::string*>{
                                        "compiler_log", &r.compiler_log()},
                                    {"output_log", &r.output_log()}}) {
    if (text->size() > limits.max_log_bytes) {
      return Bad(field, absl::StrCat("is ", text->size(), " bytes; the limit is ",
                                     limits.max_log_bytes));
    }
  }
  const bool ok = r.verdict() == v1::VERDICT_OK;
  if (r.has_speedup() && !ok) return Bad("speedup", "is set; only an ok result has a speedup");
  if (ok && !r.has_speedup()) return Bad("speedup", "is missing; an ok result has one");
  if (absl::Status s = CheckTiming("reference", r.reference(), ok, limits); !s.ok()) return s;
  if (absl::Status s = CheckTiming("candidate", r.candidate(), ok, limits); !s.ok()) return s;
  if (absl::Status s = CheckCorrectness(r.correctness(), ok); !s.ok()) return s;
  if (absl::Status s = CheckStages(r.stages()); !s.ok()) return s;
  if (absl::Status s = CheckNonNegative("timing_preroll_ms", r.timing_preroll_ms()); !s.ok()) {
    return s;
  }
  if (ok) {
    if (absl::Status s = CheckRatio("speedup", r.speedup(), r.reference(), r.candidate(), limits);
        !s.ok()) {
      return s;
    }
  }
  return CheckClocks(r, ok, limits);
}

}  // namespace kforge
