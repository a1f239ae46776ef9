// Reading a model's reply: the analysis text and exactly one code block in the dialect's
// language, checked to be a candidate of that dialect (common/dialect.h InferDialect); and the
// list of ideas of an idea-branching reply.
//
// Pure functions; thread-safe.
#ifndef KFORGE_LLM_GATEWAY_COMPLETION_PARSER_H_
#define KFORGE_LLM_GATEWAY_COMPLETION_PARSER_H_

#include <string>
#include <vector>

#include "kforge/v1/eval.pb.h"

namespace kforge::gateway {

// The language tag of a dialect's code block: "python" or "cpp".
const char* CodeLanguage(v1::Dialect dialect);

struct ParsedCompletion {
  std::string source;    // the code ("" when error is set)
  std::string analysis;  // everything outside the code blocks, trimmed
  std::string error;     // why no usable candidate was found; "" on success
};

// `finish_reason` is the provider's ("length"/"max_tokens" explain a truncated reply).
ParsedCompletion ParseCompletion(const std::string& text, v1::Dialect dialect,
                                 const std::string& finish_reason = "");

// Ideas from lines that start with "IDEA:" (any case, optionally after a list marker or in
// bold); when there are none, the items of a bulleted or numbered list. Trimmed, duplicates
// dropped, at most `max_ideas`.
std::vector<std::string> ParseIdeas(const std::string& text, size_t max_ideas);

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_COMPLETION_PARSER_H_
