// The search strategies: contrastive (CUDA-L1) and idea branching (Stanford CRFM).
#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "common/status_macros.h"
#include "coordinator/search/search.h"

namespace kforge::search {
namespace {

// Labels of a round's random streams.
constexpr uint64_t kExemplarStream = 1;
constexpr uint64_t kSeedStream = 2;

// CUDA-L1: each prompt shows a few earlier variants spread over score levels, with their
// measured speedups, and asks for a performance analysis, an algorithm design, then code.
// Every prompt of a round draws its own exemplars; all new candidates of the round are
// evaluated together (one batch, so the GPUs work in parallel).
//   prompts_per_round (2), candidates_per_prompt (2), exemplars (3), temperature (0.5)
class Contrastive : public Strategy {
 public:
  absl::Status RunRound(Round& round) override {
    const int prompts = round.IntParam("prompts_per_round", 2);
    const int per_prompt = round.IntParam("candidates_per_prompt", 2);
    const int k = round.IntParam("exemplars", 3);
    const double temperature = round.DoubleParam("temperature", 0.5);
    Rng exemplar_rng = round.rng(kExemplarStream);
    Rng seed_rng = round.rng(kSeedStream);
    std::vector<Member*> fresh;
    for (int p = 0; p < prompts; ++p) {
      GenerateAsk ask;
      ask.exemplars =
          ChooseExemplars(round.population(), round.spec().gpu_types, k, temperature, exemplar_rng);
      ask.num_candidates = per_prompt;
      ask.seed = seed_rng.Next();
      ASSIGN_OR_RETURN(std::vector<Member*> got, round.Propose(std::move(ask)));
      fresh.insert(fresh.end(), got.begin(), got.end());
    }
    return round.Evaluate(fresh);
  }
};

// Stanford CRFM: ideas in natural language, conditioned on the earlier ideas and how far each
// got; several implementations per idea, written from the best kernel so far; the best
// kernel seeds the next round; a bank of the best kernels is kept and shown when asking for
// ideas.   ideas_per_round (3), implementations_per_idea (2), bank_size (4)
class IdeaBranching : public Strategy {
 public:
  absl::Status RunRound(Round& round) override {
    const int num_ideas = round.IntParam("ideas_per_round", 3);
    const int impls = round.IntParam("implementations_per_idea", 2);
    const size_t bank_size = static_cast<size_t>(std::max(1, round.IntParam("bank_size", 4)));
    const auto& gpus = round.spec().gpu_types;
    Rng seed_rng = round.rng(kSeedStream);
    nlohmann::json& st = round.strategy_state();
    if (!st.contains("ideas")) st["ideas"] = nlohmann::json::array();

    std::vector<const Member*> bank = Bank(round, bank_size);
    IdeasAsk ideas_ask;
    ideas_ask.exemplars = bank;
    for (const auto& rec : st["ideas"]) {
      ideas_ask.earlier.push_back({rec.value("idea", ""), rec.value("best_speedup", 0.0)});
    }
    ideas_ask.num_ideas = num_ideas;
    ideas_ask.seed = seed_rng.Next();
    ASSIGN_OR_RETURN(std::vector<std::string> ideas, round.Ideas(std::move(ideas_ask)));

    // The best kernel so far seeds every implementation of this round.
    std::vector<const Member*> seed;
    if (!bank.empty()) seed.push_back(bank.front());
    std::vector<std::pair<std::string, std::vector<Member*>>> tried;
    std::vector<Member*> fresh;
    for (const std::string& idea : ideas) {
      GenerateAsk ask;
      ask.exemplars = seed;
      ask.idea = idea;
      ask.num_candidates = impls;
      ask.seed = seed_rng.Next();
      ASSIGN_OR_RETURN(std::vector<Member*> got, round.Propose(std::move(ask)));
      tried.emplace_back(idea, got);
      fresh.insert(fresh.end(), got.begin(), got.end());
    }
    RETURN_IF_ERROR(round.Evaluate(fresh));
    for (const auto& [idea, members] : tried) {
      double best = 0;
      for (const Member* m : members) best = std::max(best, Fitness(*m, gpus));
      st["ideas"].push_back({{"idea", idea}, {"round", round.number()}, {"best_speedup", best}});
    }
    nlohmann::json bank_ids = nlohmann::json::array();
    for (const Member* m : Bank(round, bank_size)) bank_ids.push_back(m->candidate_id);
    st["bank"] = bank_ids;
    return absl::OkStatus();
  }

 private:
  // The best correct members, best first.
  static std::vector<const Member*> Bank(const Round& round, size_t size) {
    std::vector<const Member*> out;
    for (const Member* m : round.population().Ranked(round.spec().gpu_types)) {
      if (out.size() >= size || Fitness(*m, round.spec().gpu_types) <= 0) break;
      out.push_back(m);
    }
    return out;
  }
};

const std::set<std::string>& KnownParams(const std::string& strategy) {
  static const std::set<std::string> contrastive = {"prompts_per_round", "candidates_per_prompt",
                                                    "exemplars", "temperature"};
  static const std::set<std::string> ideas = {"ideas_per_round", "implementations_per_idea",
                                              "bank_size"};
  return strategy == "contrastive" ? contrastive : ideas;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const JobSpec& spec) {
  const std::string& name = spec.strategy;
  if (name != "contrastive" && name != "idea_branching") {
    return absl::InvalidArgumentError("unknown strategy '" + name +
                                      "' (known: contrastive, idea_branching)");
  }
  for (const auto& [key, value] : spec.params) {
    if (!KnownParams(name).count(key)) {
      return absl::InvalidArgumentError("strategy " + name + " has no parameter '" + key + "'");
    }
    double v = 0;
    if (!absl::SimpleAtod(value, &v) || v <= 0 || (key != "temperature" && v > 64)) {
      return absl::InvalidArgumentError("strategy parameter " + key + "=" + value +
                                        " must be a positive number" +
                                        (key != "temperature" ? " up to 64" : ""));
    }
  }
  if (name == "contrastive") return std::unique_ptr<Strategy>(new Contrastive());
  return std::unique_ptr<Strategy>(new IdeaBranching());
}

}  // namespace kforge::search
