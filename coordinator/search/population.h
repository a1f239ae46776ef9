// A job's population: every candidate the search produced or was seeded with, with what was
// measured for it on each target GPU type. Members are deduplicated by content hash.
//
// Not thread-safe: one search owns its population.
#ifndef KFORGE_COORDINATOR_SEARCH_POPULATION_H_
#define KFORGE_COORDINATOR_SEARCH_POPULATION_H_

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge::search {

// The outcome of one evaluation.
struct Score {
  std::string verdict;            // "ok", "incorrect", ...
  std::optional<double> speedup;  // set only when verdict is "ok"
};

struct Member {
  std::string candidate_id;  // sha256 of the source
  std::string source;
  std::string dialect;
  int round = 0;                        // 0: a seed candidate
  std::vector<std::string> parents;     // candidate ids of the exemplars that produced it
  std::string analysis;                 // the model's performance analysis and design
  std::string idea;                     // idea branching: the idea it implements
  std::map<std::string, Score> scores;  // requested GPU type -> outcome

  bool EvaluatedOn(const std::vector<std::string>& gpu_types) const;
};

// How good a member is over the target GPU types: the geometric mean of its speedups, 0 when
// any target is missing or not ok. One number ranks members for several GPU types at once.
double Fitness(const Member& m, const std::vector<std::string>& gpu_types);

class Population {
 public:
  bool Contains(const std::string& candidate_id) const { return index_.count(candidate_id) > 0; }
  // Adds a member whose id is not present yet; returns the stored member (stable address).
  Member& Add(Member m);
  Member* Find(const std::string& candidate_id);
  const std::deque<Member>& members() const { return members_; }
  size_t size() const { return members_.size(); }

  // Members evaluated on every target type, best first (fitness, then earlier round, then id).
  std::vector<const Member*> Ranked(const std::vector<std::string>& gpu_types) const;
  // Best speedup reached on one GPU type (0 when nothing is correct there).
  double BestSpeedup(const std::string& gpu_type) const;

 private:
  std::deque<Member> members_;
  std::map<std::string, size_t> index_;
};

}  // namespace kforge::search

#endif  // KFORGE_COORDINATOR_SEARCH_POPULATION_H_
