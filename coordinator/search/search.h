// The search loop of an optimization job, independent of gRPC and PostgreSQL: a Strategy
// decides what to ask the LLM each round; the Search runs rounds, deduplicates candidates by
// content hash, counts budgets and applies the stop rules; a SearchEnv does the outside work
// (the LLM gateway, the evaluation queue, storage). Tests drive it with a fake env.
//
// Determinism: every random draw comes from Rng streams derived from the job seed and the
// round number, so the same seed, the same LLM answers and the same measurements give the
// same search. A restarted coordinator replays an interrupted round: the env answers the
// round's calls from its journal (SearchEnv::Generate gets the round and step numbers).
//
// Not thread-safe: one thread runs one job's search.
#ifndef KFORGE_COORDINATOR_SEARCH_SEARCH_H_
#define KFORGE_COORDINATOR_SEARCH_SEARCH_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/search/population.h"
#include "coordinator/search/rng.h"
#include "nlohmann/json.hpp"

namespace kforge::search {

struct Budget {
  int max_rounds = 5;
  int max_candidates = 0;     // generated candidates (seeds not counted); 0: unlimited
  uint64_t max_tokens = 0;    // 0: unlimited
  double max_wall_s = 0;      // 0: unlimited
  double target_speedup = 0;  // stop once reached on every target GPU type; 0: never
  int max_stale_rounds = 2;   // stop after this many rounds without a new candidate
};

struct JobSpec {
  std::vector<std::string> gpu_types;  // target types ("any" allowed)
  std::string strategy = "contrastive";
  std::map<std::string, std::string> params;  // strategy parameters
  std::string dialect = "nvrtc";              // dialect of generated candidates
  uint64_t seed = 1;
  Budget budget;
};

// What the search keeps between rounds (stored as JSON with the job). The population itself
// is rebuilt from the stored candidates and evaluations.
struct SearchState {
  bool seeds_evaluated = false;
  int rounds_done = 0;
  uint64_t tokens_used = 0;
  int candidates_generated = 0;
  int stale_rounds = 0;
  std::string stop_reason;
  nlohmann::json strategy = nlohmann::json::object();  // the strategy's own state

  nlohmann::json ToJson() const;
  static SearchState FromJson(const nlohmann::json& j);
};

// One request for completions.
struct GenerateAsk {
  int round = 0;
  int step = 0;  // position of this call within the round (the env's journal key)
  std::string strategy;
  std::vector<const Member*> exemplars;  // shown to the model, best first
  std::string idea;                      // idea branching: what to implement
  int num_candidates = 1;
  uint64_t seed = 0;
};

struct Proposal {
  std::string source;  // empty when the completion could not be parsed
  std::string dialect;
  std::string analysis;
  std::string parse_error;
  int64_t llm_call_id = 0;
};

struct GenerateReply {
  std::vector<Proposal> proposals;
  uint64_t tokens = 0;
};

struct IdeaRecord {
  std::string idea;
  double best_speedup = 0;  // best fitness its implementations reached (0: none correct)
};

struct IdeasAsk {
  int round = 0;
  int step = 0;
  std::vector<const Member*> exemplars;
  std::vector<IdeaRecord> earlier;
  int num_ideas = 3;
  uint64_t seed = 0;
};

struct IdeasReply {
  std::vector<std::string> ideas;
  uint64_t tokens = 0;
};

class SearchEnv {
 public:
  virtual ~SearchEnv() = default;
  virtual absl::StatusOr<GenerateReply> Generate(const GenerateAsk& ask) = 0;
  virtual absl::StatusOr<IdeasReply> ProposeIdeas(const IdeasAsk& ask) = 0;
  // Stores a new member (called once per new candidate, before it is evaluated).
  virtual absl::Status Accept(const Member& member) = 0;
  // Evaluates the members on every target GPU type and fills in their scores. `round` and
  // `step` key the env's journal like Generate's.
  virtual absl::Status Evaluate(int round, int step, const std::vector<Member*>& members) = 0;
  // True once the job must stop (cancelled, coordinator shutting down).
  virtual bool ShouldStop() = 0;
  // Seconds since the job started (wall clock, across restarts).
  virtual double ElapsedS() = 0;
};

class Round;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual absl::Status RunRound(Round& round) = 0;
};

// INVALID_ARGUMENT for an unknown strategy or a malformed parameter.
absl::StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const JobSpec& spec);

// What a strategy sees during one round.
class Round {
 public:
  Round(int number, const JobSpec& spec, SearchEnv& env, Population& population, SearchState& state)
      : number_(number), spec_(spec), env_(env), population_(population), state_(state) {}

  int number() const { return number_; }
  const JobSpec& spec() const { return spec_; }
  const Population& population() const { return population_; }
  nlohmann::json& strategy_state() { return state_.strategy; }
  // A random stream for this round; `label` separates independent uses.
  Rng rng(uint64_t label) const;
  // Integer parameter of the strategy, `fallback` when absent.
  int IntParam(const std::string& name, int fallback) const;
  double DoubleParam(const std::string& name, double fallback) const;

  // Asks for completions, drops unparsable and duplicate ones, stores and returns the new
  // members (not evaluated yet). Asks for fewer when the candidate budget is nearly spent and
  // for none once it or the token budget is spent.
  absl::StatusOr<std::vector<Member*>> Propose(GenerateAsk ask);
  absl::StatusOr<std::vector<std::string>> Ideas(IdeasAsk ask);
  absl::Status Evaluate(const std::vector<Member*>& members);
  bool BudgetSpent() const;
  int new_candidates() const { return new_candidates_; }

 private:
  int number_;
  const JobSpec& spec_;
  SearchEnv& env_;
  Population& population_;
  SearchState& state_;
  int step_ = 0;
  int new_candidates_ = 0;
  std::set<std::string> taken_;  // candidate ids proposed in this round
};

// Runs a job's search to its end. `checkpoint` is called after the seed evaluation and after
// every round with the state to persist; an error from it stops the search.
class Search {
 public:
  Search(JobSpec spec, SearchEnv& env, Population& population, SearchState& state)
      : spec_(std::move(spec)), env_(env), population_(population), state_(state) {}

  // Returns the stop reason ("max_rounds", "target_speedup", ...); an error when the env or a
  // strategy failed (the job fails with it).
  absl::StatusOr<std::string> Run(
      const std::function<absl::Status(const SearchState&)>& checkpoint);
  // The stop rule that applies now, "" when the search may go on.
  std::string StopReason();

 private:
  JobSpec spec_;
  SearchEnv& env_;
  Population& population_;
  SearchState& state_;
};

// Exemplar choice of the contrastive strategy (exposed for tests): up to `k` evaluated
// members spread over score levels. The correct members, ranked, are cut into `k` levels of
// equal size; the best member always leads, and one member is drawn from each other level
// with probability proportional to exp((fitness - level max) / temperature). Failed members
// fill the remaining places (the most recent first), so the model also sees what broke.
std::vector<const Member*> ChooseExemplars(const Population& population,
                                           const std::vector<std::string>& gpu_types, int k,
                                           double temperature, Rng& rng);
// The same choice among `ranked` (members in Population::Ranked order, e.g. one island's).
std::vector<const Member*> ChooseExemplarsFrom(const std::vector<const Member*>& ranked,
                                               const std::vector<std::string>& gpu_types, int k,
                                               double temperature, Rng& rng);

}  // namespace kforge::search

#endif  // KFORGE_COORDINATOR_SEARCH_SEARCH_H_
