#include "llm_gateway/prompt_builder.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/dialect.h"
#include "common/status_macros.h"
#include "llm_gateway/completion_parser.h"

namespace kforge::gateway {
namespace {

constexpr size_t kMaxAnalysisChars = 3000;

std::string VerdictWord(v1::Verdict v) {
  std::string name = v1::Verdict_Name(v);
  if (name.rfind("VERDICT_", 0) == 0) name = name.substr(8);
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  return name;
}

// Best first: measured speedup descending, failures (speedup 0) last; stable otherwise.
std::vector<const v1::Exemplar*> ByScore(
    const google::protobuf::RepeatedPtrField<v1::Exemplar>& exemplars) {
  std::vector<const v1::Exemplar*> sorted;
  for (const auto& e : exemplars) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(), [](const v1::Exemplar* a, const v1::Exemplar* b) {
    return a->speedup() > b->speedup();
  });
  return sorted;
}

std::string RenderExemplars(const google::protobuf::RepeatedPtrField<v1::Exemplar>& exemplars,
                            const char* noun) {
  if (exemplars.empty()) {
    return absl::StrCat("(none yet: this is the first round; start from the reference)\n");
  }
  std::string out;
  int n = 0;
  for (const v1::Exemplar* e : ByScore(exemplars)) {
    const bool failed = e->verdict() != v1::VERDICT_UNSPECIFIED && e->verdict() != v1::VERDICT_OK;
    std::string gpu = e->gpu_type().empty() ? "an unnamed GPU" : e->gpu_type();
    absl::StrAppend(&out, "## ", noun, " ", ++n, ": ");
    if (failed || e->speedup() <= 0) {
      absl::StrAppend(&out, "failed (", failed ? VerdictWord(e->verdict()) : "no speedup measured",
                      ") on ", gpu, "\n\n");
    } else {
      absl::StrAppend(&out, absl::StrFormat("speedup %.3fx on %s", e->speedup(), gpu), "\n\n");
    }
    if (!e->analysis().empty()) {
      std::string analysis = e->analysis().substr(0, kMaxAnalysisChars);
      if (analysis.size() < e->analysis().size()) analysis += "\n[analysis truncated]";
      absl::StrAppend(&out, "The analysis that led to it:\n\n", analysis, "\n\n");
    }
    v1::Dialect d =
        e->dialect() != v1::DIALECT_UNSPECIFIED ? e->dialect() : InferDialect(e->source());
    absl::StrAppend(&out, "```", CodeLanguage(d), "\n", e->source());
    if (!e->source().empty() && e->source().back() != '\n') out += '\n';
    out += "```\n\n";
  }
  return out;
}

absl::StatusOr<std::string> RenderTask(const TemplateSet& templates, const std::string& strategy,
                                       v1::Dialect dialect,
                                       std::map<std::string, std::string> vars) {
  const std::string dialect_name = DialectName(dialect);
  const std::string pair = absl::StrCat(strategy, "_", dialect_name, ".md");
  vars["code_language"] = CodeLanguage(dialect);
  vars["dialect_name"] = dialect_name;
  if (templates.Has(pair)) return templates.Render(pair, vars);
  ASSIGN_OR_RETURN(vars["dialect_guide"],
                   templates.Render(absl::StrCat("dialect_", dialect_name, ".md"), vars));
  return templates.Render(strategy + ".md", vars);
}

}  // namespace

absl::StatusOr<Prompt> BuildGeneratePrompt(const TemplateSet& templates,
                                           const v1::GenerateRequest& request,
                                           const std::string& strategy, v1::Dialect dialect) {
  Prompt prompt;
  ASSIGN_OR_RETURN(prompt.system, templates.Render("system.md", {}));
  std::map<std::string, std::string> vars = {{"task_source", request.task_source()}};
  if (strategy == "idea_branching") {
    vars["idea"] =
        request.idea().empty() ? "(no idea given: choose the most promising one)" : request.idea();
    vars["exemplars"] = RenderExemplars(request.exemplars(), "Kernel");
    ASSIGN_OR_RETURN(prompt.user, RenderTask(templates, "idea_branching", dialect, vars));
  } else {
    vars["exemplars"] = RenderExemplars(request.exemplars(), "Variant");
    ASSIGN_OR_RETURN(prompt.user, RenderTask(templates, "contrastive", dialect, vars));
  }
  return prompt;
}

absl::StatusOr<Prompt> BuildIdeasPrompt(const TemplateSet& templates,
                                        const v1::ProposeIdeasRequest& request,
                                        uint32_t num_ideas) {
  Prompt prompt;
  ASSIGN_OR_RETURN(prompt.system, templates.Render("system.md", {}));
  std::string earlier;
  for (const v1::IdeaOutcome& idea : request.earlier_ideas()) {
    absl::StrAppend(&earlier, "- ", idea.idea(), " -> ",
                    idea.best_speedup() > 0
                        ? absl::StrFormat("best speedup %.3fx", idea.best_speedup())
                        : std::string("no correct implementation"),
                    "\n");
  }
  if (earlier.empty()) earlier = "(none yet)\n";
  ASSIGN_OR_RETURN(
      prompt.user,
      templates.Render("ideas.md", {{"task_source", request.task_source()},
                                    {"exemplars", RenderExemplars(request.exemplars(), "Kernel")},
                                    {"earlier_ideas", earlier},
                                    {"num_ideas", std::to_string(num_ideas)}}));
  return prompt;
}

}  // namespace kforge::gateway
