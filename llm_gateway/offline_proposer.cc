#include "llm_gateway/offline_proposer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <regex>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/dialect.h"

namespace kforge::gateway {
namespace {

const std::regex& MarkerRegex() {
  static const std::regex r(
      R"(^\s*(?:#|//)\s*kforge:\s*tunable\s+([A-Za-z_]\w*)\s*=\s*\S+\s+choices\s*=\s*(\S+))");
  return r;
}

// `prefix NAME = value suffix` at global scope: no indentation; C++ declarations may put
// words (constexpr, types) before the name.
std::regex AssignmentRegex(const std::string& name) {
  return std::regex(R"(^((?:[A-Za-z_][\w:<>]*\s+)*)()" + name +
                    R"()(\s*=\s*)([^;#/]*?)(\s*(?:;.*|#.*|//.*)?)$)");
}

std::vector<std::string> Lines(const std::string& source) { return absl::StrSplit(source, '\n'); }

// A uniform double in [0, 1) from the raw 64-bit output, which the standard fixes for
// mt19937_64 (its distributions are implementation-defined).
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::string IdeaKnob(const std::string& idea) {
  static const std::regex r(R"(\btune\s+([A-Za-z_]\w*))", std::regex::icase);
  std::smatch m;
  return std::regex_search(idea, m, r) ? m[1].str() : "";
}

struct Change {
  size_t knob;
  std::string value;
};

struct Mutation {
  size_t exemplar;  // index into the ranked exemplar list
  std::vector<Change> changes;
  double key = 0;  // sampling key (Efraimidis-Spirakis: u^(1/weight), largest first)
};

struct Ranked {
  const v1::Exemplar* exemplar;
  std::vector<Tunable> knobs;
};

std::string Apply(const Ranked& r, const std::vector<Change>& changes) {
  std::vector<std::string> lines = Lines(r.exemplar->source());
  for (const Change& c : changes) {
    const Tunable& t = r.knobs[c.knob];
    std::smatch m;
    std::string line = lines[t.line];
    if (std::regex_match(line, m, AssignmentRegex(t.name))) {
      lines[t.line] = m[1].str() + m[2].str() + m[3].str() + c.value + m[5].str();
    }
  }
  return absl::StrJoin(lines, "\n");
}

std::string Describe(const v1::Exemplar& e) {
  std::string id =
      e.candidate_id().empty() ? "" : absl::StrCat(" ", e.candidate_id().substr(0, 12));
  if (e.speedup() > 0) {
    return absl::StrFormat("the variant%s (speedup %.3fx on %s)", id, e.speedup(),
                           e.gpu_type().empty() ? "an unnamed GPU" : e.gpu_type());
  }
  return absl::StrCat("the variant", id, " (no speedup measured)");
}

}  // namespace

std::vector<Tunable> FindTunables(const std::string& source) {
  std::vector<std::string> lines = Lines(source);
  std::vector<Tunable> knobs;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(lines[i], m, MarkerRegex())) continue;
    Tunable t;
    t.name = m[1].str();
    for (absl::string_view c : absl::StrSplit(m[2].str(), ',', absl::SkipEmpty())) {
      if (std::find(t.choices.begin(), t.choices.end(), c) == t.choices.end()) {
        t.choices.emplace_back(c);
      }
    }
    std::smatch a;
    if (!std::regex_match(lines[i + 1], a, AssignmentRegex(t.name))) continue;
    t.current = a[4].str();
    t.line = i + 1;
    if (t.choices.size() >= 2 || (t.choices.size() == 1 && t.choices[0] != t.current)) {
      knobs.push_back(std::move(t));
    }
  }
  return knobs;
}

OfflineResult ProposeOffline(const google::protobuf::RepeatedPtrField<v1::Exemplar>& exemplars,
                             v1::Dialect dialect, const std::string& idea, uint64_t seed,
                             size_t count) {
  OfflineResult result;
  std::set<std::string> taken;  // exemplar sources, then proposals
  std::vector<Ranked> ranked;
  for (const v1::Exemplar& e : exemplars) {
    taken.insert(e.source());
    v1::Dialect d = e.dialect() != v1::DIALECT_UNSPECIFIED ? e.dialect() : InferDialect(e.source());
    if (dialect != v1::DIALECT_UNSPECIFIED && d != dialect) continue;
    std::vector<Tunable> knobs = FindTunables(e.source());
    if (!knobs.empty()) ranked.push_back({&e, std::move(knobs)});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.exemplar->speedup() > b.exemplar->speedup();
  });
  if (ranked.empty()) {
    result.error = absl::StrCat(
        "offline proposer: no exemplar",
        dialect != v1::DIALECT_UNSPECIFIED ? absl::StrCat(" of dialect ", DialectName(dialect))
                                           : "",
        " declares tunable parameters (`# kforge: tunable NAME=default choices=a,b,c` above a "
        "module-level `NAME = value`)");
    return result;
  }
  const std::string knob = IdeaKnob(idea);
  if (!idea.empty() && knob.empty()) {
    result.error = absl::StrCat("offline proposer: the idea \"", idea,
                                "\" names no knob (offline ideas read \"tune NAME\")");
    return result;
  }

  // Every one- and two-knob change of every exemplar, with its sampling weight.
  std::mt19937_64 rng(seed);
  std::vector<Mutation> all;
  auto add = [&](size_t e, std::vector<Change> changes, double weight) {
    all.push_back({e, std::move(changes), std::pow(Uniform(rng), 1.0 / weight)});
  };
  for (size_t e = 0; e < ranked.size(); ++e) {
    const double rank_weight = static_cast<double>(ranked.size() - e);
    const std::vector<Tunable>& knobs = ranked[e].knobs;
    auto alternatives = [&](size_t k) {
      std::vector<std::string> out;
      for (const std::string& c : knobs[k].choices) {
        if (c != knobs[k].current) out.push_back(c);
      }
      return out;
    };
    auto wanted = [&](size_t k) { return knob.empty() || knobs[k].name == knob; };
    for (size_t a = 0; a < knobs.size(); ++a) {
      for (const std::string& va : alternatives(a)) {
        if (wanted(a)) add(e, {{a, va}}, 3 * rank_weight);
        for (size_t b = a + 1; b < knobs.size(); ++b) {
          if (!wanted(a) && !wanted(b)) continue;
          for (const std::string& vb : alternatives(b)) add(e, {{a, va}, {b, vb}}, rank_weight);
        }
      }
    }
  }
  if (all.empty()) {
    result.error = absl::StrCat("offline proposer: no exemplar has a knob named ", knob);
    return result;
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Mutation& a, const Mutation& b) { return a.key > b.key; });
  for (const Mutation& m : all) {
    if (result.proposals.size() >= count) break;
    const Ranked& r = ranked[m.exemplar];
    std::string source = Apply(r, m.changes);
    if (!taken.insert(source).second) continue;
    std::vector<std::string> what;
    for (const Change& c : m.changes) {
      what.push_back(
          absl::StrCat(r.knobs[c.knob].name, " ", r.knobs[c.knob].current, " -> ", c.value));
    }
    std::string analysis = absl::StrCat(
        "Offline proposer (no LLM): started from ", Describe(*r.exemplar), ", ranked ",
        m.exemplar + 1, " of ", ranked.size(), " exemplars with tunable parameters, and changed ",
        absl::StrJoin(what, " and "), ". These are knobs the variant declares with ",
        "`kforge: tunable`; every listed choice is valid, so only the measured time can tell.");
    if (!idea.empty()) analysis = absl::StrCat("Idea: ", idea, "\n\n", analysis);
    result.proposals.push_back({std::move(source), std::move(analysis)});
  }
  if (result.proposals.empty()) {
    result.error = "offline proposer: every knob change gives a source that is already an exemplar";
  }
  return result;
}

std::vector<std::string> OfflineIdeas(const v1::ProposeIdeasRequest& request, size_t count) {
  // Knobs by name, with the choices of the best exemplar that declares them.
  std::vector<const v1::Exemplar*> sorted;
  for (const v1::Exemplar& e : request.exemplars()) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const v1::Exemplar* a, const v1::Exemplar* b) {
    return a->speedup() > b->speedup();
  });
  std::vector<std::string> names;
  std::map<std::string, std::vector<std::string>> choices;
  for (const v1::Exemplar* e : sorted) {
    for (Tunable& t : FindTunables(e->source())) {
      if (choices.emplace(t.name, t.choices).second) names.push_back(t.name);
    }
  }
  std::map<std::string, double> tried;  // knob -> best speedup of an idea that tuned it
  for (const v1::IdeaOutcome& o : request.earlier_ideas()) {
    std::string knob = IdeaKnob(o.idea());
    if (!knob.empty()) tried[knob] = std::max(tried[knob], o.best_speedup());
  }
  std::vector<std::string> fresh, old;
  for (const std::string& n : names) (tried.count(n) ? old : fresh).push_back(n);
  std::mt19937_64 rng(request.seed());
  for (size_t i = fresh.size(); i > 1; --i) std::swap(fresh[i - 1], fresh[rng() % i]);
  std::stable_sort(old.begin(), old.end(),
                   [&](const std::string& a, const std::string& b) { return tried[a] > tried[b]; });
  fresh.insert(fresh.end(), old.begin(), old.end());
  std::vector<std::string> ideas;
  for (const std::string& n : fresh) {
    if (ideas.size() >= count) break;
    ideas.push_back(absl::StrCat("tune ", n, " (choices: ", absl::StrJoin(choices[n], ", "), ")"));
  }
  return ideas;
}

}  // namespace kforge::gateway
