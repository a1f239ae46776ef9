// Prompts from templates (templates.h) for each strategy and dialect:
//   contrastive / islands  contrastive.md     (CUDA-L1: variants with measured speedups, best
//                                              first; analysis, design, then code)
//   idea_branching         idea_branching.md  (Stanford CRFM: implement the given idea)
//   ProposeIdeas           ideas.md
// The dialect's instructions come from dialect_<dialect>.md into {{dialect_guide}}; a template
// named <strategy>_<dialect>.md, when present (e.g. in --templates_dir), replaces the pair.
//
// Pure functions over an immutable TemplateSet; thread-safe.
#ifndef KFORGE_LLM_GATEWAY_PROMPT_BUILDER_H_
#define KFORGE_LLM_GATEWAY_PROMPT_BUILDER_H_

#include <string>

#include "absl/status/statusor.h"
#include "kforge/v1/gateway.pb.h"
#include "llm_gateway/templates.h"

namespace kforge::gateway {

struct Prompt {
  std::string system;
  std::string user;
};

// `strategy` must be "contrastive", "islands" or "idea_branching" (the caller validates).
absl::StatusOr<Prompt> BuildGeneratePrompt(const TemplateSet& templates,
                                           const v1::GenerateRequest& request,
                                           const std::string& strategy, v1::Dialect dialect);
absl::StatusOr<Prompt> BuildIdeasPrompt(const TemplateSet& templates,
                                        const v1::ProposeIdeasRequest& request, uint32_t num_ideas);

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_PROMPT_BUILDER_H_
