// The search strategies: contrastive (CUDA-L1), idea branching (Stanford CRFM) and islands
// (OpenEvolve / AlphaEvolve).
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

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
// Contrastive prompts (shared by contrastive and islands): `prompts` asks, each showing
// exemplars drawn from `pool` (members in ranked order) with the round's streams.
class ContrastivePrompts {
 public:
  ContrastivePrompts(const Round& round, const char* prompts_param, int prompts_default)
      : prompts_(round.IntParam(prompts_param, prompts_default)),
        per_prompt_(round.IntParam("candidates_per_prompt", 2)),
        k_(round.IntParam("exemplars", 3)),
        temperature_(round.DoubleParam("temperature", 0.5)),
        exemplar_rng_(round.rng(kExemplarStream)),
        seed_rng_(round.rng(kSeedStream)) {}

  // The new members the prompts produced (not evaluated yet).
  absl::StatusOr<std::vector<Member*>> Ask(Round& round, const std::vector<const Member*>& pool) {
    std::vector<Member*> fresh;
    for (int p = 0; p < prompts_; ++p) {
      GenerateAsk ask;
      ask.exemplars =
          ChooseExemplarsFrom(pool, round.spec().gpu_types, k_, temperature_, exemplar_rng_);
      ask.num_candidates = per_prompt_;
      ask.seed = seed_rng_.Next();
      ASSIGN_OR_RETURN(std::vector<Member*> got, round.Propose(std::move(ask)));
      fresh.insert(fresh.end(), got.begin(), got.end());
    }
    return fresh;
  }

 private:
  int prompts_, per_prompt_, k_;
  double temperature_;
  Rng exemplar_rng_, seed_rng_;
};

class Contrastive : public Strategy {
 public:
  absl::Status RunRound(Round& round) override {
    ContrastivePrompts prompts(round, "prompts_per_round", 2);
    ASSIGN_OR_RETURN(std::vector<Member*> fresh,
                     prompts.Ask(round, round.population().Ranked(round.spec().gpu_types)));
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

// OpenEvolve / AlphaEvolve: the population is split into islands that evolve apart. Each
// prompt draws its exemplars (as contrastive does) from one island only, and what it produces
// joins that island, so an early lucky kernel cannot take over every lineage. Every
// `migration_interval` rounds, each island's best `migrants` correct members that the next
// island lacks join it (a ring). The seeds start on every island. The gateway uses the
// contrastive template.
//   islands (4), prompts_per_island (1), candidates_per_prompt (2), exemplars (3),
//   temperature (0.5), migration_interval (3), migrants (1)
// State: "islands" (per island, its members' candidate ids), "migrations" (rounds migrated).
class Islands : public Strategy {
 public:
  absl::Status RunRound(Round& round) override {
    const int n = round.IntParam("islands", 4);
    const int interval = std::max(1, round.IntParam("migration_interval", 3));
    const size_t migrants = static_cast<size_t>(round.IntParam("migrants", 1));
    const auto& gpus = round.spec().gpu_types;
    nlohmann::json& st = round.strategy_state();
    if (!st.contains("islands")) {
      nlohmann::json seeds = nlohmann::json::array();
      for (const Member& m : round.population().members()) {
        if (m.round == 0) seeds.push_back(m.candidate_id);
      }
      st["islands"] = nlohmann::json::array();
      for (int i = 0; i < n; ++i) st["islands"].push_back(seeds);
      st["migrations"] = nlohmann::json::array();
    }
    std::vector<std::set<std::string>> islands;
    for (const auto& ids : st["islands"]) islands.emplace_back(ids.begin(), ids.end());

    const std::vector<const Member*> ranked = round.population().Ranked(gpus);
    ContrastivePrompts prompts(round, "prompts_per_island", 1);
    std::vector<std::vector<Member*>> produced(islands.size());
    std::vector<Member*> fresh;
    for (size_t i = 0; i < islands.size(); ++i) {
      ASSIGN_OR_RETURN(produced[i], prompts.Ask(round, Of(ranked, islands[i])));
      fresh.insert(fresh.end(), produced[i].begin(), produced[i].end());
    }
    RETURN_IF_ERROR(round.Evaluate(fresh));
    for (size_t i = 0; i < islands.size(); ++i) {
      for (const Member* m : produced[i]) islands[i].insert(m->candidate_id);
    }
    if (round.number() % interval == 0 && islands.size() > 1) {
      // Chosen from every island before any moves, so a migrant travels one hop per migration.
      const std::vector<const Member*> now = round.population().Ranked(gpus);
      std::vector<std::vector<std::string>> moving(islands.size());
      for (size_t i = 0; i < islands.size(); ++i) {
        const std::set<std::string>& next = islands[(i + 1) % islands.size()];
        for (const Member* m : Of(now, islands[i])) {
          if (moving[i].size() >= migrants || Fitness(*m, gpus) <= 0) break;
          if (!next.count(m->candidate_id)) moving[i].push_back(m->candidate_id);  // not a seed
        }
      }
      for (size_t i = 0; i < islands.size(); ++i) {
        for (const std::string& id : moving[i]) islands[(i + 1) % islands.size()].insert(id);
      }
      st["migrations"].push_back(round.number());
    }
    // Stored in population order, so the state reads the same however the sets hash.
    for (size_t i = 0; i < islands.size(); ++i) {
      nlohmann::json ids = nlohmann::json::array();
      for (const Member& m : round.population().members()) {
        if (islands[i].count(m.candidate_id)) ids.push_back(m.candidate_id);
      }
      st["islands"][i] = ids;
    }
    return absl::OkStatus();
  }

 private:
  // The members of `ranked` on one island, in ranked order.
  static std::vector<const Member*> Of(const std::vector<const Member*>& ranked,
                                       const std::set<std::string>& island) {
    std::vector<const Member*> out;
    for (const Member* m : ranked) {
      if (island.count(m->candidate_id)) out.push_back(m);
    }
    return out;
  }
};

// Every strategy: its name, its parameters, and how to make one.
struct Kind {
  const char* name;
  std::set<std::string> params;
  std::unique_ptr<Strategy> (*make)();
};

template <typename S>
std::unique_ptr<Strategy> Make() {
  return std::make_unique<S>();
}

const std::vector<Kind>& Kinds() {
  static const auto* kinds = new std::vector<Kind>{
      {"contrastive",
       {"prompts_per_round", "candidates_per_prompt", "exemplars", "temperature"},
       Make<Contrastive>},
      {"idea_branching", {"ideas_per_round", "implementations_per_idea", "bank_size"},
       Make<IdeaBranching>},
      {"islands",
       {"islands", "prompts_per_island", "candidates_per_prompt", "exemplars", "temperature",
        "migration_interval", "migrants"},
       Make<Islands>},
  };
  return *kinds;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const JobSpec& spec) {
  const std::string& name = spec.strategy;
  const Kind* kind = nullptr;
  std::string known;
  for (const Kind& k : Kinds()) {
    if (name == k.name) kind = &k;
    known += (known.empty() ? "" : ", ") + std::string(k.name);
  }
  if (!kind) {
    return absl::InvalidArgumentError("unknown strategy '" + name + "' (known: " + known + ")");
  }
  for (const auto& [key, value] : spec.params) {
    if (!kind->params.count(key)) {
      return absl::InvalidArgumentError("strategy " + name + " has no parameter '" + key + "'");
    }
    // An integer is read as Round::IntParam reads it: "0.1e1" is no whole number there.
    const bool integer = key != "temperature";
    double v = 0;
    int i = 0;
    const bool parsed = integer ? absl::SimpleAtoi(value, &i) : absl::SimpleAtod(value, &v);
    if (integer) v = i;
    if (!parsed || v <= 0 || (integer && v > 64)) {
      return absl::InvalidArgumentError("strategy parameter " + key + "=" + value + " must be " +
                                        (integer ? "a whole number from 1 to 64"
                                                 : "a positive number"));
    }
  }
  return kind->make();
}

}  // namespace kforge::search
