#include "coordinator/bench/latency_summary.h"

#include "gtest/gtest.h"

namespace kforge {
namespace {

TEST(SummarizeTest, EmptyGivesZeros) {
  LatencySummary s = Summarize({});
  EXPECT_EQ(s.n, 0);
  EXPECT_EQ(s.p99_ms, 0);
  EXPECT_EQ(s.max_ms, 0);
}

TEST(SummarizeTest, NearestRankOnHundredSamples) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);  // unsorted on purpose
  LatencySummary s = Summarize(samples);
  EXPECT_EQ(s.n, 100);
  EXPECT_DOUBLE_EQ(s.mean_ms, 50.5);
  EXPECT_DOUBLE_EQ(s.p50_ms, 50);
  EXPECT_DOUBLE_EQ(s.p90_ms, 90);
  EXPECT_DOUBLE_EQ(s.p99_ms, 99);
  EXPECT_DOUBLE_EQ(s.max_ms, 100);
}

TEST(SummarizeTest, FewSamplesReportMeasuredValues) {
  LatencySummary s = Summarize({3, 1, 2});
  EXPECT_DOUBLE_EQ(s.p50_ms, 2);
  EXPECT_DOUBLE_EQ(s.p90_ms, 3);
  EXPECT_DOUBLE_EQ(s.p99_ms, 3);
}

TEST(SummaryJsonTest, NamesEveryField) {
  EXPECT_EQ(SummaryJson(Summarize({1, 2})),
            R"({"n":2,"mean":1.500,"p50":1.000,"p90":2.000,"p99":2.000,"max":2.000})");
}

TEST(LatencySamplesTest, ClearDropsSamples) {
  LatencySamples samples;
  samples.Add(5);
  samples.Clear();
  samples.Add(7);
  EXPECT_EQ(samples.Summary().n, 1);
  EXPECT_DOUBLE_EQ(samples.Summary().max_ms, 7);
}

}  // namespace
}  // namespace kforge
