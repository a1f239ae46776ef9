#include "coordinator/result_columns.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

using ::testing::StartsWith;

// column -> value, "NULL" for nullopt.
std::map<std::string, std::string> Values(const v1::EvalResult& r) {
  std::map<std::string, std::string> out;
  for (const ResultColumn& c : ResultColumns(r)) out[c.name] = c.value.value_or("NULL");
  return out;
}

TEST(ResultColumnsTest, AnOkResultFillsBothClocks) {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_OK);
  r.set_speedup(1.6);
  r.mutable_reference()->set_median_ms(2.4);
  r.mutable_reference()->set_n(20);
  r.mutable_candidate()->set_median_ms(1.5);
  r.mutable_candidate()->set_n(20);
  r.mutable_candidate()->set_capped(true);
  *r.mutable_reference_call() = r.reference();
  *r.mutable_candidate_call() = r.candidate();
  r.mutable_reference_device()->set_median_ms(0.002);
  r.mutable_reference_device()->set_n(30);
  r.set_speedup_call(1.6);
  r.set_speedup_clock("call");
  r.set_speedup_ci_low(1.5);
  r.set_speedup_ci_high(1.7);
  r.set_native_code(true);
  std::map<std::string, std::string> v = Values(r);
  EXPECT_EQ(v["verdict"], "ok");
  EXPECT_EQ(v["speedup"], "1.6");  // the shortest text of the double
  r.set_speedup(1e-7 / 3);
  EXPECT_EQ(Values(r)["speedup"], "3.3333333333333334e-08");  // not std::to_string's 0.000000
  EXPECT_EQ(v["speedup_call"], v["speedup"]);
  EXPECT_EQ(v["speedup_device"], "NULL");  // not trusted: the process reached native code
  EXPECT_EQ(v["speedup_clock"], "call");
  EXPECT_EQ(v["reference_call_ms"], "2.4");
  EXPECT_EQ(v["candidate_call_ms"], "1.5");
  EXPECT_EQ(v["reference_device_ms"], "0.002");
  EXPECT_EQ(v["candidate_device_ms"], "NULL");  // not measured
  EXPECT_EQ(v["speedup_ci_low"], "1.5");
  EXPECT_EQ(v["speedup_ci_high"], "1.7");
  EXPECT_EQ(v["native_code"], "true");
  EXPECT_EQ(v["timing_capped"], "true");
}

TEST(ResultColumnsTest, AFailedResultHasNoSpeedupsMediansOrInterval) {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_COMPILE_ERROR);
  r.set_reason("nvrtc: error");
  r.set_speedup_clock("device");
  std::map<std::string, std::string> v = Values(r);
  EXPECT_EQ(v["verdict"], "compile_error");
  EXPECT_EQ(v["reason"], "nvrtc: error");
  for (const char* column :
       {"speedup", "ref_median_ms", "cand_median_ms", "speedup_device", "speedup_call",
        "reference_device_ms", "candidate_device_ms", "reference_call_ms", "candidate_call_ms",
        "speedup_ci_low", "speedup_ci_high", "timing_capped"}) {
    EXPECT_EQ(v[column], "NULL") << column;
  }
  EXPECT_EQ(v["speedup_clock"], "device");
  EXPECT_EQ(v["native_code"], "false");
  r.clear_speedup_clock();
  EXPECT_EQ(Values(r)["speedup_clock"], "NULL");
}

TEST(ResultColumnsTest, AssignmentsNumberEveryColumnInOrder) {
  const std::string sql = ResultColumnAssignments(6);
  EXPECT_THAT(sql, StartsWith("verdict = $6::text, reason = $7::text, rule = $8::text, "
                              "speedup = $9::float8, "));
  const size_t n = ResultColumns(v1::EvalResult()).size();
  EXPECT_NE(sql.find("timing_capped = $" + std::to_string(6 + n - 1) + "::bool"), std::string::npos)
      << sql;
  EXPECT_EQ(sql.find("$" + std::to_string(6 + n)), std::string::npos) << sql;
}

}  // namespace
}  // namespace kforge
