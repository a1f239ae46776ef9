#include "coordinator/bench/bench_workload.h"

#include <set>

#include "gtest/gtest.h"

namespace kforge {
namespace {

TEST(BenchWorkloadTest, CandidateNamesItsBatch) {
  EXPECT_EQ(BenchBatchOf(BenchCandidateSource(2, 17, 17004)), 17);
  EXPECT_EQ(BenchBatchOf("class ModelNew: pass\n"), -1);
  EXPECT_EQ(BenchBatchOf("# kforge-dispatch-bench batch=x phase=1\n"), -1);
}

TEST(BenchWorkloadTest, BatchesCoverEveryEvaluationOnceWithDistinctSources) {
  auto batches = BenchBatches("task", "sim", 1, 2500, 1000);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[2].candidates_size(), 500);
  std::set<std::string> sources;
  for (size_t b = 0; b < batches.size(); ++b) {
    EXPECT_EQ(batches[b].gpu_types(0), "sim");
    for (const auto& c : batches[b].candidates()) {
      EXPECT_EQ(BenchBatchOf(c.source()), static_cast<int>(b));
      sources.insert(c.source());
    }
  }
  EXPECT_EQ(sources.size(), 2500u);
}

}  // namespace
}  // namespace kforge
