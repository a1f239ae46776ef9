#include "coordinator/search/search.h"

#include <map>
#include <set>

#include "common/base/sha256.h"
#include "coordinator/search/reward.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kforge::search {
namespace {

using ::testing::ElementsAre;

// A fake LLM and evaluator. A candidate's source is "k<N>"; its speedup on every GPU type is
// N / 10 (N divisible by 7: incorrect). The fake LLM answers a prompt with sources derived
// from the request seed, in a small space (so duplicates happen), and journals every call by
// (round, step) so a second env can replay an interrupted round.
class FakeEnv : public SearchEnv {
 public:
  explicit FakeEnv(std::vector<std::string> gpus) : gpus_(std::move(gpus)) {}

  absl::StatusOr<GenerateReply> Generate(const GenerateAsk& ask) override {
    asks.push_back(ask);
    auto key = std::make_pair(ask.round, ask.step);
    if (auto it = generate_journal.find(key); it != generate_journal.end()) return it->second;
    ++llm_calls;
    if (stop_after_calls > 0 && llm_calls > stop_after_calls) stop = true;
    GenerateReply reply;
    Rng rng(ask.seed);
    for (int i = 0; i < ask.num_candidates; ++i) {
      Proposal p;
      if (fixed_source.empty()) {
        p.source = "k" + std::to_string(1 + rng.Below(space));
      } else {
        p.source = fixed_source;
      }
      p.dialect = "nvrtc";
      if (unparsable_every > 0 && (i % unparsable_every) == 0) {
        p.parse_error = "no code block";
        p.source.clear();
      }
      reply.proposals.push_back(p);
    }
    reply.tokens = tokens_per_call;
    generate_journal[key] = reply;
    return reply;
  }
  absl::StatusOr<IdeasReply> ProposeIdeas(const IdeasAsk& ask) override {
    ideas_asks.push_back(ask);
    IdeasReply r;
    for (int i = 0; i < ask.num_ideas; ++i) {
      r.ideas.push_back("idea " + std::to_string(ask.round) + "." + std::to_string(i));
    }
    r.tokens = tokens_per_call;
    return r;
  }
  absl::Status Accept(const Member& m) override {
    accepted.push_back(m.candidate_id);
    return absl::OkStatus();
  }
  absl::Status Evaluate(int, int, const std::vector<Member*>& members) override {
    for (Member* m : members) {
      int n = std::atoi(m->source.c_str() + 1);
      for (const std::string& g : gpus_) {
        Score s;
        if (n % 7 == 0) {
          s.verdict = "incorrect";
        } else {
          s.verdict = "ok";
          s.speedup = n / 10.0;
        }
        m->scores[g] = s;
      }
      ++evaluated;
    }
    return absl::OkStatus();
  }
  bool ShouldStop() override { return stop; }
  double ElapsedS() override { return elapsed_s; }

  std::vector<std::string> gpus_;
  std::vector<GenerateAsk> asks;
  std::vector<IdeasAsk> ideas_asks;
  std::map<std::pair<int, int>, GenerateReply> generate_journal;
  std::vector<std::string> accepted;
  int llm_calls = 0, evaluated = 0, stop_after_calls = 0, unparsable_every = 0;
  size_t space = 40;
  uint64_t tokens_per_call = 100;
  std::string fixed_source;
  bool stop = false;
  double elapsed_s = 0;
};

Member Seed(const std::string& source) {
  Member m;
  m.candidate_id = Sha256Hex(source);
  m.source = source;
  m.dialect = "nvrtc";
  return m;
}

JobSpec Spec(uint64_t seed, int rounds) {
  JobSpec spec;
  spec.gpu_types = {"H200"};
  spec.seed = seed;
  spec.budget.max_rounds = rounds;
  spec.budget.max_stale_rounds = 0;
  return spec;
}

struct Outcome {
  std::string reason;
  std::vector<std::string> ids;  // population in insertion order
  SearchState state;
};

Outcome RunSearch(const JobSpec& spec, FakeEnv& env, Population& pop, SearchState& state) {
  Search search(spec, env, pop, state);
  auto reason = search.Run([](const SearchState&) { return absl::OkStatus(); });
  Outcome out;
  out.reason = reason.ok() ? *reason : std::string(reason.status().message());
  for (const Member& m : pop.members()) out.ids.push_back(m.candidate_id);
  out.state = state;
  return out;
}

TEST(SearchTest, SameSeedSameSearchOtherSeedOtherSearch) {
  auto run = [](uint64_t seed) {
    FakeEnv env({"H200"});
    Population pop;
    pop.Add(Seed("k12"));
    SearchState state;
    return RunSearch(Spec(seed, 4), env, pop, state);
  };
  Outcome a = run(7), b = run(7), c = run(8);
  EXPECT_EQ(a.reason, "max_rounds");
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_NE(a.ids, c.ids);
  EXPECT_EQ(a.state.rounds_done, 4);
}

TEST(SearchTest, SeedsAreEvaluatedFirstAndShownWithTheirScores) {
  FakeEnv env({"H200"});
  Population pop;
  pop.Add(Seed("k12"));
  SearchState state;
  RunSearch(Spec(1, 1), env, pop, state);
  ASSERT_FALSE(env.asks.empty());
  ASSERT_FALSE(env.asks[0].exemplars.empty());
  EXPECT_EQ(env.asks[0].exemplars[0]->source, "k12");
  EXPECT_EQ(env.asks[0].exemplars[0]->scores.at("H200").speedup.value(), 1.2);
  EXPECT_TRUE(state.seeds_evaluated);
}

TEST(SearchTest, DuplicatesAndUnparsableCompletionsAreNotCandidates) {
  FakeEnv env({"H200"});
  env.space = 3;  // at most k1, k2, k3
  env.unparsable_every = 2;
  Population pop;
  SearchState state;
  RunSearch(Spec(3, 6), env, pop, state);
  std::set<std::string> unique(env.accepted.begin(), env.accepted.end());
  EXPECT_EQ(unique.size(), env.accepted.size()) << "a candidate was accepted twice";
  EXPECT_LE(pop.size(), 3u);
  EXPECT_EQ(state.candidates_generated, static_cast<int>(pop.size()));
  EXPECT_EQ(env.evaluated, static_cast<int>(pop.size())) << "each candidate evaluated once";
}

TEST(SearchTest, StopsWhenRoundsBringNothingNew) {
  FakeEnv env({"H200"});
  env.fixed_source = "k5";
  Population pop;
  SearchState state;
  JobSpec spec = Spec(1, 50);
  spec.budget.max_stale_rounds = 2;
  Outcome out = RunSearch(spec, env, pop, state);
  EXPECT_EQ(out.reason, "no_new_candidates");
  EXPECT_EQ(state.rounds_done, 3);  // round 1 found k5, rounds 2 and 3 nothing
  EXPECT_EQ(pop.size(), 1u);
}

TEST(SearchTest, CandidateBudgetCapsWhatIsAskedFor) {
  FakeEnv env({"H200"});
  env.space = 1000;
  Population pop;
  SearchState state;
  JobSpec spec = Spec(1, 50);
  spec.budget.max_candidates = 5;
  Outcome out = RunSearch(spec, env, pop, state);
  EXPECT_EQ(out.reason, "max_candidates");
  EXPECT_EQ(state.candidates_generated, 5);
  EXPECT_EQ(pop.size(), 5u);
  // 2 prompts x 2 per round: the second round's first prompt asks for 1, then nothing more.
  ASSERT_EQ(env.asks.size(), 3u);
  EXPECT_EQ(env.asks[2].num_candidates, 1);
}

TEST(SearchTest, TokenBudgetStopsTheSearch) {
  FakeEnv env({"H200"});
  env.space = 1000;
  env.tokens_per_call = 250;
  Population pop;
  SearchState state;
  JobSpec spec = Spec(1, 50);
  spec.budget.max_tokens = 1000;
  Outcome out = RunSearch(spec, env, pop, state);
  EXPECT_EQ(out.reason, "max_tokens");
  EXPECT_EQ(env.llm_calls, 4);
  EXPECT_EQ(state.tokens_used, 1000u);
}

TEST(SearchTest, TargetSpeedupAndWallTimeStop) {
  {
    FakeEnv env({"H200"});
    Population pop;
    pop.Add(Seed("k30"));  // 3.0x
    SearchState state;
    JobSpec spec = Spec(1, 50);
    spec.budget.target_speedup = 2.5;
    EXPECT_EQ(RunSearch(spec, env, pop, state).reason, "target_speedup");
    EXPECT_EQ(env.llm_calls, 0);
  }
  {
    FakeEnv env({"H200"});
    env.elapsed_s = 100;
    Population pop;
    SearchState state;
    JobSpec spec = Spec(1, 50);
    spec.budget.max_wall_s = 60;
    EXPECT_EQ(RunSearch(spec, env, pop, state).reason, "max_wall_time");
  }
}

TEST(SearchTest, InterruptedRoundIsReplayedFromTheJournal) {
  // Reference: an uninterrupted search.
  FakeEnv ref_env({"H200"});
  Population ref_pop;
  ref_pop.Add(Seed("k12"));
  SearchState ref_state;
  Outcome ref = RunSearch(Spec(11, 3), ref_env, ref_pop, ref_state);

  // The same search stopped in the middle of round 2 (after its first LLM call), then
  // resumed by a new Search over the stored population, state and journal.
  FakeEnv env({"H200"});
  env.stop_after_calls = 3;
  Population pop;
  pop.Add(Seed("k12"));
  SearchState state;
  SearchState checkpointed;
  Search first(Spec(11, 3), env, pop, state);
  auto reason = first.Run([&](const SearchState& s) {
    checkpointed = s;
    return absl::OkStatus();
  });
  ASSERT_TRUE(reason.ok());
  EXPECT_EQ(*reason, "stopped");
  EXPECT_EQ(checkpointed.rounds_done, 1);

  env.stop = false;
  env.stop_after_calls = 0;
  SearchState resumed = checkpointed;  // what the database holds
  Outcome out = RunSearch(Spec(11, 3), env, pop, resumed);
  EXPECT_EQ(out.reason, "max_rounds");
  EXPECT_EQ(out.ids, ref.ids);
  EXPECT_EQ(resumed.tokens_used, ref_state.tokens_used);
  EXPECT_EQ(resumed.candidates_generated, ref_state.candidates_generated);
  // Round 2's calls came from the journal the second time, not from the LLM.
  EXPECT_EQ(env.llm_calls, ref_env.llm_calls);
}

TEST(ExemplarTest, BestLeadsLevelsSpreadFailuresFill) {
  Population pop;
  for (int n : {5, 8, 11, 13, 15, 19, 21, 14}) {
    Member& m = pop.Add(Seed("k" + std::to_string(n)));
    Score s;
    s.verdict = n % 7 == 0 ? "incorrect" : "ok";
    if (s.verdict == "ok") s.speedup = n / 10.0;
    m.scores["H200"] = s;
  }
  Rng rng(1);
  auto ex = ChooseExemplars(pop, {"H200"}, 3, 0.01, rng);
  ASSERT_EQ(ex.size(), 3u);
  EXPECT_EQ(ex[0]->source, "k19");
  // Correct ranked: 19 15 13 11 8 5 -> levels [19 15] [13 11] [8 5]; low temperature picks
  // each level's top.
  EXPECT_EQ(ex[1]->source, "k13");
  EXPECT_EQ(ex[2]->source, "k8");

  Population few;
  Member& ok = few.Add(Seed("k12"));
  ok.scores["H200"] = {"ok", 1.2};
  Member& bad = few.Add(Seed("k14"));
  bad.scores["H200"] = {"incorrect", std::nullopt};
  few.Add(Seed("k3"));  // not evaluated: never shown
  auto ex2 = ChooseExemplars(few, {"H200"}, 3, 1.0, rng);
  ASSERT_EQ(ex2.size(), 2u);
  EXPECT_EQ(ex2[0]->source, "k12");
  EXPECT_EQ(ex2[1]->source, "k14");
}

TEST(ExemplarTest, TemperatureSpreadsTheDrawWithinALevel) {
  Population pop;
  for (int n = 1; n <= 40; ++n) {
    if (n % 7 == 0) continue;
    Member& m = pop.Add(Seed("k" + std::to_string(n)));
    m.scores["H200"] = {"ok", n / 10.0};
  }
  std::set<std::string> hot, cold;
  for (uint64_t s = 0; s < 200; ++s) {
    Rng r1(s), r2(s);
    hot.insert(ChooseExemplars(pop, {"H200"}, 2, 100.0, r1)[1]->source);
    cold.insert(ChooseExemplars(pop, {"H200"}, 2, 0.001, r2)[1]->source);
  }
  EXPECT_EQ(cold.size(), 1u);
  EXPECT_GT(hot.size(), 5u);
}

TEST(FitnessTest, GeometricMeanOverTargetsZeroWhenAnyFails) {
  Member m = Seed("x");
  m.scores["A100"] = {"ok", 4.0};
  m.scores["H100"] = {"ok", 1.0};
  EXPECT_DOUBLE_EQ(Fitness(m, {"A100", "H100"}), 2.0);
  m.scores["H100"] = {"timeout", std::nullopt};
  EXPECT_EQ(Fitness(m, {"A100", "H100"}), 0);
  EXPECT_EQ(Fitness(m, {"A100", "L40"}), 0);
}

TEST(IdeaBranchingTest, IdeasThenImplementationsFromTheBestKernel) {
  FakeEnv env({"H200"});
  env.space = 1000;
  Population pop;
  pop.Add(Seed("k12"));
  pop.Add(Seed("k25"));
  SearchState state;
  JobSpec spec = Spec(5, 2);
  spec.strategy = "idea_branching";
  spec.params = {{"ideas_per_round", "2"}, {"implementations_per_idea", "3"}};
  Outcome out = RunSearch(spec, env, pop, state);
  EXPECT_EQ(out.reason, "max_rounds");
  ASSERT_EQ(env.ideas_asks.size(), 2u);
  EXPECT_EQ(env.ideas_asks[0].exemplars[0]->source, "k25");
  EXPECT_EQ(env.ideas_asks[1].earlier.size(), 2u);
  ASSERT_EQ(env.asks.size(), 4u);
  EXPECT_EQ(env.asks[0].idea, "idea 1.0");
  EXPECT_EQ(env.asks[0].num_candidates, 3);
  ASSERT_EQ(env.asks[0].exemplars.size(), 1u);
  EXPECT_EQ(env.asks[0].exemplars[0]->source, "k25");
  EXPECT_EQ(state.strategy["ideas"].size(), 4u);
  EXPECT_FALSE(state.strategy["bank"].empty());
  for (const Member& m : pop.members()) {
    if (m.round > 0) {
      EXPECT_FALSE(m.idea.empty());
    }
  }
}

TEST(StrategyTest, IslandsEvolveApartAndTheBestMigrateAroundTheRing) {
  FakeEnv env({"H200"});
  env.space = 1000;
  Population pop;
  pop.Add(Seed("k12"));
  SearchState state;
  JobSpec spec = Spec(5, 2);
  spec.strategy = "islands";
  spec.params = {{"islands", "3"}, {"migration_interval", "2"}, {"migrants", "1"}};
  Outcome out = RunSearch(spec, env, pop, state);
  EXPECT_EQ(out.reason, "max_rounds");
  ASSERT_EQ(env.asks.size(), 6u);  // 3 islands x 1 prompt x 2 rounds, island order
  EXPECT_EQ(state.strategy["migrations"], nlohmann::json::array({2}));

  // What each island made, replayed from the fake LLM (ask a is island a % 3's); a source
  // made twice belongs to the island that made it first.
  const std::string seed = Sha256Hex("k12");
  std::vector<std::set<std::string>> made(3);
  std::set<std::string> seen = {seed};
  for (size_t a = 0; a < env.asks.size(); ++a) {
    Rng rng(env.asks[a].seed);
    for (int c = 0; c < env.asks[a].num_candidates; ++c) {
      std::string id = Sha256Hex("k" + std::to_string(1 + rng.Below(env.space)));
      if (seen.insert(id).second) made[a % 3].insert(id);
    }
  }
  // Round 1's prompts show the seed only; round 2's, members of their own island only.
  for (size_t a = 0; a < 6; ++a) {
    for (const Member* e : env.asks[a].exemplars) {
      EXPECT_TRUE(e->candidate_id == seed || (a >= 3 && made[a % 3].count(e->candidate_id)))
          << "ask " << a << " showed a member of another island";
      EXPECT_LE(e->round, a >= 3 ? 1 : 0) << "an exemplar not evaluated before the ask";
    }
  }
  // After round 2's migration: island i = the seed, what it made, and the best correct member
  // of island i-1 (as it was before the migration).
  auto best_of = [&](const std::set<std::string>& ids) {
    for (const Member* m : pop.Ranked({"H200"})) {
      if (ids.count(m->candidate_id) && Fitness(*m, {"H200"}) > 0) return m->candidate_id;
    }
    return std::string();
  };
  for (size_t i = 0; i < 3; ++i) {
    std::set<std::string> want = made[i];
    want.insert(seed);
    // (the seed is on every island already, so the best the next island lacks moves)
    want.insert(best_of(made[(i + 2) % 3]));
    std::set<std::string> got;
    for (const auto& id : state.strategy["islands"][i]) got.insert(id.get<std::string>());
    EXPECT_EQ(got, want) << "island " << i;
  }
  // Same seed, same islands.
  FakeEnv env2({"H200"});
  env2.space = 1000;
  Population pop2;
  pop2.Add(Seed("k12"));
  SearchState state2;
  RunSearch(spec, env2, pop2, state2);
  EXPECT_EQ(state2.strategy, state.strategy);
}

TEST(StrategyTest, UnknownStrategyOrParameterIsInvalid) {
  JobSpec spec;
  spec.strategy = "annealing";
  EXPECT_EQ(MakeStrategy(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec.strategy = "islands";
  spec.params = {{"islands", "2"}, {"migration_interval", "1"}};
  EXPECT_TRUE(MakeStrategy(spec).ok());
  spec.params = {{"bank_size", "2"}};  // idea branching's, not islands'
  EXPECT_EQ(MakeStrategy(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec.params = {{"migration_interval", "0.5"}};  // would be 0 rounds: a division by zero
  EXPECT_EQ(MakeStrategy(spec).status().code(), absl::StatusCode::kInvalidArgument);
  // Whole numbers to strtod, 0 to atoi (a red team's SIGFPE of the coordinator, session 29).
  for (const char* v : {"0.1e1", "0.5e1", "1e1", "3.0", "0x3", "3x"}) {
    spec.params = {{"migration_interval", v}};
    EXPECT_EQ(MakeStrategy(spec).status().code(), absl::StatusCode::kInvalidArgument) << v;
  }
  spec.params = {{"temperature", "0.5"}};
  EXPECT_TRUE(MakeStrategy(spec).ok());
  spec.strategy = "contrastive";
  spec.params = {{"exemplarz", "3"}};
  EXPECT_EQ(MakeStrategy(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec.params = {{"exemplars", "-1"}};
  EXPECT_EQ(MakeStrategy(spec).status().code(), absl::StatusCode::kInvalidArgument);
  spec.params = {{"exemplars", "4"}, {"temperature", "0.3"}};
  EXPECT_TRUE(MakeStrategy(spec).ok());
}

// A job stored before MakeStrategy refused "0.1e1" (atoi: 0) no longer divides by zero when a
// restarted coordinator resumes it: the search ends with the parameter's error instead.
TEST(StrategyTest, AStoredJobWithANonIntegerParameterEndsWithAnError) {
  JobSpec spec = Spec(1, 4);
  spec.strategy = "islands";
  spec.params = {{"migration_interval", "0.1e1"}};
  FakeEnv env({"H200"});
  Population pop;
  pop.Add(Seed("k12"));
  SearchState state;
  Outcome out = RunSearch(spec, env, pop, state);
  EXPECT_THAT(out.reason, ::testing::HasSubstr("migration_interval=0.1e1"));
  SearchState fresh;
  Round round(1, spec, env, pop, fresh);
  EXPECT_EQ(round.IntParam("migration_interval", 3), 3);
}

TEST(RewardTest, NormalisedWithRollingStatisticsAndClipped) {
  EXPECT_EQ(RawReward("ok", 2.5), 2.5);
  EXPECT_EQ(RawReward("incorrect", std::nullopt), 0);
  RewardNormalizer norm(4, 1.5);
  EXPECT_EQ(norm.Add(1.0), 0);           // no spread yet
  EXPECT_DOUBLE_EQ(norm.Add(3.0), 1.0);  // mean 2, sd 1
  norm.Add(1.0);
  norm.Add(3.0);
  EXPECT_DOUBLE_EQ(norm.Add(100.0), 1.5);  // window [3 1 3 100]: z = 1.73, clipped
  norm.Add(0);
  norm.Add(0);
  norm.Add(0);
  norm.Add(0);  // window of 4 zeros: no spread
  EXPECT_EQ(norm.Add(0), 0);
}

}  // namespace
}  // namespace kforge::search
