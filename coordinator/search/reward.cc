#include "coordinator/search/reward.h"

#include <algorithm>
#include <cmath>

namespace kforge::search {

double RawReward(const std::string& verdict, std::optional<double> speedup) {
  return verdict == "ok" && speedup ? *speedup : 0.0;
}

double RewardNormalizer::Add(double raw) {
  recent_.push_back(raw);
  if (recent_.size() > window_) recent_.pop_front();
  double mean = 0;
  for (double r : recent_) mean += r;
  mean /= static_cast<double>(recent_.size());
  double var = 0;
  for (double r : recent_) var += (r - mean) * (r - mean);
  double sd = std::sqrt(var / static_cast<double>(recent_.size()));
  if (sd < 1e-12) return 0;
  return std::clamp((raw - mean) / sd, -clip_, clip_);
}

}  // namespace kforge::search
