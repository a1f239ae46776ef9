#include "gpu_worker/eval/timing.h"

#include <cmath>
#include <random>
#include <vector>

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

TEST(RelStderrOfMedianTest, TooFewOrNonPositiveSamplesAreUnknown) {
  EXPECT_EQ(RelStderrOfMedian({1.0, 1.0}), 1);
  EXPECT_EQ(RelStderrOfMedian({0.0, 0.0, 0.0}), 1);
  EXPECT_EQ(RelStderrOfMedian({2.0, 2.0, 2.0}), 0);
}

}  // namespace
}  // namespace kforge::eval
