// The longest one evaluation runs on a worker, and the Helm chart's numbers for it: the
// chart's workerDefaults.evaluationLimitSeconds is that limit with the engine's default stage
// limits (the coordinator sets none), and its grace period exceeds it, so a drain (SIGTERM,
// then the grace period) never kills a running evaluation.
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "gpu_worker/sandbox_evaluator.h"
#include "gtest/gtest.h"

namespace kforge {
namespace {

TEST(EvaluationWallLimitTest, TheHelmChartsGracePeriodExceedsTheLongestEvaluation) {
  const v1::EvalRequest full;
  const double limit = EvaluationWallLimitS(full, WorkerOptions{}.extra_wall_s);
  EXPECT_EQ(limit, 120 + 120 + 60 + 180 + 60);
  v1::EvalRequest build;
  build.set_build_only(true);
  EXPECT_EQ(EvaluationWallLimitS(build, 60), 120 + 60);
  v1::EvalRequest custom;
  custom.mutable_limits()->set_build_s(10);
  custom.mutable_limits()->set_correctness_s(20);
  custom.mutable_limits()->set_timing_s(30);
  EXPECT_EQ(EvaluationWallLimitS(custom, 5), 10 + 20 + 30 + 180 + 5);

  const char* root = std::getenv("KFORGE_SOURCE_DIR");
  ASSERT_NE(root, nullptr);
  std::ifstream in(std::string(root) + "/helm/kforge/values.yaml");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string values = text.str();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(values, m, std::regex("\n  evaluationLimitSeconds: ([0-9]+)")));
  EXPECT_EQ(std::stod(m[1]), limit) << "workerDefaults.evaluationLimitSeconds";
  ASSERT_TRUE(
      std::regex_search(values, m, std::regex("\n  terminationGracePeriodSeconds: ([0-9]+)")));
  EXPECT_GT(std::stod(m[1]), limit) << "workerDefaults.terminationGracePeriodSeconds";
}

}  // namespace
}  // namespace kforge
