#include "coordinator/search/population.h"

#include <algorithm>
#include <cmath>

namespace kforge::search {

bool Member::EvaluatedOn(const std::vector<std::string>& gpu_types) const {
  return std::all_of(gpu_types.begin(), gpu_types.end(),
                     [this](const std::string& g) { return scores.count(g) > 0; });
}

double Fitness(const Member& m, const std::vector<std::string>& gpu_types) {
  if (gpu_types.empty()) return 0;
  double log_sum = 0;
  for (const std::string& g : gpu_types) {
    auto it = m.scores.find(g);
    if (it == m.scores.end() || it->second.verdict != "ok" || !it->second.speedup ||
        *it->second.speedup <= 0) {
      return 0;
    }
    log_sum += std::log(*it->second.speedup);
  }
  return std::exp(log_sum / static_cast<double>(gpu_types.size()));
}

Member& Population::Add(Member m) {
  index_[m.candidate_id] = members_.size();
  members_.push_back(std::move(m));
  return members_.back();
}

Member* Population::Find(const std::string& candidate_id) {
  auto it = index_.find(candidate_id);
  return it == index_.end() ? nullptr : &members_[it->second];
}

std::vector<const Member*> Population::Ranked(const std::vector<std::string>& gpu_types) const {
  std::vector<std::pair<double, const Member*>> scored;
  for (const Member& m : members_) {
    if (m.EvaluatedOn(gpu_types)) scored.emplace_back(Fitness(m, gpu_types), &m);
  }
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    if (a.second->round != b.second->round) return a.second->round < b.second->round;
    return a.second->candidate_id < b.second->candidate_id;
  });
  std::vector<const Member*> out;
  out.reserve(scored.size());
  for (const auto& [f, m] : scored) out.push_back(m);
  return out;
}

double Population::BestSpeedup(const std::string& gpu_type) const {
  double best = 0;
  for (const Member& m : members_) {
    auto it = m.scores.find(gpu_type);
    if (it != m.scores.end() && it->second.verdict == "ok" && it->second.speedup) {
      best = std::max(best, *it->second.speedup);
    }
  }
  return best;
}

}  // namespace kforge::search
