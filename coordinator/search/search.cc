#include "coordinator/search/search.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/base/sha256.h"
#include "common/status_macros.h"

namespace kforge::search {

nlohmann::json SearchState::ToJson() const {
  return {{"seeds_evaluated", seeds_evaluated},
          {"rounds_done", rounds_done},
          {"tokens_used", tokens_used},
          {"candidates_generated", candidates_generated},
          {"stale_rounds", stale_rounds},
          {"stop_reason", stop_reason},
          {"strategy", strategy}};
}

SearchState SearchState::FromJson(const nlohmann::json& j) {
  SearchState s;
  if (!j.is_object()) return s;
  s.seeds_evaluated = j.value("seeds_evaluated", false);
  s.rounds_done = j.value("rounds_done", 0);
  s.tokens_used = j.value("tokens_used", uint64_t{0});
  s.candidates_generated = j.value("candidates_generated", 0);
  s.stale_rounds = j.value("stale_rounds", 0);
  s.stop_reason = j.value("stop_reason", "");
  if (j.contains("strategy") && j["strategy"].is_object()) s.strategy = j["strategy"];
  return s;
}

Rng Round::rng(uint64_t label) const {
  return Rng(Rng::Derive(Rng::Derive(spec_.seed, static_cast<uint64_t>(number_)), label));
}

int Round::IntParam(const std::string& name, int fallback) const {
  auto it = spec_.params.find(name);
  int value = 0;
  // MakeStrategy accepted only whole numbers; a job stored before it checked so reads its
  // default rather than whatever atoi made of it ("0.1e1" was 0, a division by zero).
  return it != spec_.params.end() && absl::SimpleAtoi(it->second, &value) ? value : fallback;
}

double Round::DoubleParam(const std::string& name, double fallback) const {
  auto it = spec_.params.find(name);
  return it == spec_.params.end() ? fallback : std::atof(it->second.c_str());
}

bool Round::BudgetSpent() const {
  const Budget& b = spec_.budget;
  return (b.max_candidates > 0 && state_.candidates_generated >= b.max_candidates) ||
         (b.max_tokens > 0 && state_.tokens_used >= b.max_tokens);
}

absl::StatusOr<std::vector<Member*>> Round::Propose(GenerateAsk ask) {
  std::vector<Member*> out;
  if (BudgetSpent() || env_.ShouldStop()) return out;
  if (spec_.budget.max_candidates > 0) {
    ask.num_candidates =
        std::min(ask.num_candidates, spec_.budget.max_candidates - state_.candidates_generated);
  }
  ask.round = number_;
  ask.step = step_++;
  ask.strategy = spec_.strategy;
  ASSIGN_OR_RETURN(GenerateReply reply, env_.Generate(ask));
  state_.tokens_used += reply.tokens;
  std::vector<std::string> parents;
  for (const Member* e : ask.exemplars) parents.push_back(e->candidate_id);
  for (const Proposal& p : reply.proposals) {
    if (p.source.empty()) continue;  // unparsable: kept in the env's journal, not a candidate
    if (spec_.budget.max_candidates > 0 &&
        state_.candidates_generated >= spec_.budget.max_candidates) {
      break;
    }
    std::string id = Sha256Hex(p.source);
    if (Member* existing = population_.Find(id)) {
      // Already known: a duplicate, unless this round is being replayed after a restart and
      // the member was stored by the interrupted run of this very round.
      if (existing->round != number_ || !taken_.insert(id).second) continue;
      out.push_back(existing);
      ++state_.candidates_generated;
      ++new_candidates_;
      continue;
    }
    taken_.insert(id);
    Member m;
    m.candidate_id = id;
    m.source = p.source;
    m.dialect = p.dialect.empty() ? spec_.dialect : p.dialect;
    m.round = number_;
    m.parents = parents;
    m.analysis = p.analysis;
    m.idea = ask.idea;
    RETURN_IF_ERROR(env_.Accept(m));
    out.push_back(&population_.Add(std::move(m)));
    ++state_.candidates_generated;
    ++new_candidates_;
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> Round::Ideas(IdeasAsk ask) {
  if (BudgetSpent() || env_.ShouldStop()) return std::vector<std::string>{};
  ask.round = number_;
  ask.step = step_++;
  ASSIGN_OR_RETURN(IdeasReply reply, env_.ProposeIdeas(ask));
  state_.tokens_used += reply.tokens;
  return reply.ideas;
}

absl::Status Round::Evaluate(const std::vector<Member*>& members) {
  if (members.empty()) return absl::OkStatus();
  return env_.Evaluate(number_, step_++, members);
}

std::string Search::StopReason() {
  const Budget& b = spec_.budget;
  if (env_.ShouldStop()) return "stopped";
  double best_min = spec_.gpu_types.empty() ? 0 : 1e300;
  for (const std::string& g : spec_.gpu_types) {
    best_min = std::min(best_min, population_.BestSpeedup(g));
  }
  if (b.target_speedup > 0 && best_min >= b.target_speedup) return "target_speedup";
  if (state_.rounds_done >= b.max_rounds) return "max_rounds";
  if (b.max_candidates > 0 && state_.candidates_generated >= b.max_candidates) {
    return "max_candidates";
  }
  if (b.max_tokens > 0 && state_.tokens_used >= b.max_tokens) return "max_tokens";
  if (b.max_wall_s > 0 && env_.ElapsedS() >= b.max_wall_s) return "max_wall_time";
  if (b.max_stale_rounds > 0 && state_.stale_rounds >= b.max_stale_rounds) {
    return "no_new_candidates";
  }
  return "";
}

absl::StatusOr<std::string> Search::Run(
    const std::function<absl::Status(const SearchState&)>& checkpoint) {
  ASSIGN_OR_RETURN(std::unique_ptr<Strategy> strategy, MakeStrategy(spec_));
  if (!state_.seeds_evaluated) {
    // Round 0: measure the seed candidates, so the first prompt can show their speedups.
    Round round(0, spec_, env_, population_, state_);
    std::vector<Member*> unscored;
    for (const Member& m : population_.members()) {
      if (!m.EvaluatedOn(spec_.gpu_types)) unscored.push_back(population_.Find(m.candidate_id));
    }
    RETURN_IF_ERROR(round.Evaluate(unscored));
    if (env_.ShouldStop()) return std::string("stopped");
    state_.seeds_evaluated = true;
    RETURN_IF_ERROR(checkpoint(state_));
  }
  while (true) {
    std::string reason = StopReason();
    if (!reason.empty()) {
      state_.stop_reason = reason;
      return reason;
    }
    Round round(state_.rounds_done + 1, spec_, env_, population_, state_);
    RETURN_IF_ERROR(strategy->RunRound(round));
    if (env_.ShouldStop()) return std::string("stopped");  // the round may be incomplete
    state_.stale_rounds = round.new_candidates() == 0 ? state_.stale_rounds + 1 : 0;
    ++state_.rounds_done;
    RETURN_IF_ERROR(checkpoint(state_));
  }
}

std::vector<const Member*> ChooseExemplars(const Population& population,
                                           const std::vector<std::string>& gpu_types, int k,
                                           double temperature, Rng& rng) {
  return ChooseExemplarsFrom(population.Ranked(gpu_types), gpu_types, k, temperature, rng);
}

std::vector<const Member*> ChooseExemplarsFrom(const std::vector<const Member*>& ranked,
                                               const std::vector<std::string>& gpu_types, int k,
                                               double temperature, Rng& rng) {
  std::vector<const Member*> out;
  if (k <= 0) return out;
  std::vector<const Member*> correct, failed;
  for (const Member* m : ranked) (Fitness(*m, gpu_types) > 0 ? correct : failed).push_back(m);
  const size_t n = correct.size();
  const size_t levels = std::min<size_t>(static_cast<size_t>(k), n);
  if (levels > 0) out.push_back(correct[0]);
  temperature = std::max(temperature, 1e-6);
  for (size_t level = 1; level < levels; ++level) {
    size_t begin = level * n / levels, end = (level + 1) * n / levels;
    double top = Fitness(*correct[begin], gpu_types);
    std::vector<double> weights;
    double total = 0;
    for (size_t i = begin; i < end; ++i) {
      double w = std::exp((Fitness(*correct[i], gpu_types) - top) / temperature);
      weights.push_back(w);
      total += w;
    }
    double x = rng.Uniform() * total;
    size_t pick = begin;
    for (size_t i = 0; i < weights.size(); ++i, ++pick) {
      if (x < weights[i] || i + 1 == weights.size()) break;
      x -= weights[i];
    }
    out.push_back(correct[pick]);
  }
  // Failed members, most recent round first, fill what is left.
  std::stable_sort(failed.begin(), failed.end(),
                   [](const Member* a, const Member* b) { return a->round > b->round; });
  for (const Member* m : failed) {
    if (out.size() >= static_cast<size_t>(k)) break;
    out.push_back(m);
  }
  return out;
}

}  // namespace kforge::search
