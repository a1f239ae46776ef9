// Rewards as CUDA-L1 computes them: the raw reward is the measured speedup (0 for anything
// that is not a correct, timed candidate), normalised with the rolling mean and standard
// deviation of the job's recent raw rewards, and clipped to [-k, k] with k = 1.5.
//
// Not thread-safe.
#ifndef KFORGE_COORDINATOR_SEARCH_REWARD_H_
#define KFORGE_COORDINATOR_SEARCH_REWARD_H_

#include <cstddef>
#include <deque>
#include <optional>
#include <string>

namespace kforge::search {

double RawReward(const std::string& verdict, std::optional<double> speedup);

class RewardNormalizer {
 public:
  explicit RewardNormalizer(size_t window = 100, double clip = 1.5)
      : window_(window), clip_(clip) {}
  // Adds `raw` to the window and returns it normalised against the window (itself included):
  // (raw - mean) / std, clipped to [-clip, clip]; 0 while the window has no spread.
  double Add(double raw);

 private:
  size_t window_;
  double clip_;
  std::deque<double> recent_;
};

}  // namespace kforge::search

#endif  // KFORGE_COORDINATOR_SEARCH_REWARD_H_
