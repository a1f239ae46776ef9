#include "coordinator/result_columns.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "common/result_json.h"

namespace kforge {
namespace {

std::optional<std::string> Float8(bool present, double v) {
  if (!present) return std::nullopt;
  char buf[32];
  // The shortest text that reads back as the same double (std::to_string keeps 6 decimals).
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? end : buf);
}

std::optional<std::string> Median(const v1::TimingStats& t) {
  return Float8(t.n() > 0, t.median_ms());
}

std::optional<std::string> Text(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return s;
}

std::string Bool(bool b) { return b ? "true" : "false"; }

}  // namespace

std::vector<ResultColumn> ResultColumns(const v1::EvalResult& r) {
  const bool interval = r.speedup_ci_low() != 0 || r.speedup_ci_high() != 0;
  const bool timed = r.reference().n() > 0 || r.candidate().n() > 0;
  return {
      {"verdict", "text", std::string(VerdictName(r.verdict()))},
      {"reason", "text", r.reason()},
      {"rule", "text", r.rule()},
      {"speedup", "float8", Float8(r.has_speedup(), r.speedup())},
      {"ref_median_ms", "float8", Median(r.reference())},
      {"cand_median_ms", "float8", Median(r.candidate())},
      {"compiler_log", "text", r.compiler_log()},
      {"speedup_device", "float8", Float8(r.has_speedup_device(), r.speedup_device())},
      {"speedup_call", "float8", Float8(r.has_speedup_call(), r.speedup_call())},
      {"speedup_clock", "text", Text(r.speedup_clock())},
      {"reference_device_ms", "float8", Median(r.reference_device())},
      {"candidate_device_ms", "float8", Median(r.candidate_device())},
      {"reference_call_ms", "float8", Median(r.reference_call())},
      {"candidate_call_ms", "float8", Median(r.candidate_call())},
      {"speedup_ci_low", "float8", Float8(interval, r.speedup_ci_low())},
      {"speedup_ci_high", "float8", Float8(interval, r.speedup_ci_high())},
      {"native_code", "bool", Bool(r.native_code())},
      {"timing_capped", "bool",
       timed ? std::optional<std::string>(Bool(r.reference().capped() || r.candidate().capped()))
             : std::nullopt},
  };
}

std::string ResultColumnAssignments(int first_parameter) {
  std::string out;
  int i = first_parameter;
  for (const ResultColumn& c : ResultColumns(v1::EvalResult())) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", c.name, " = $", i++, "::", c.type);
  }
  return out;
}

}  // namespace kforge
