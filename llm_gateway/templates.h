// Prompt templates: text files with {{placeholders}}, compiled into the binary from
// llm_gateway/templates/ (embed_templates.cmake), optionally overridden at startup by the
// files of a directory (--templates_dir): a file there replaces the embedded one of the same
// name, and the others stay.
//
// Thread-safety: a loaded TemplateSet is immutable; Render is thread-safe.
#ifndef KFORGE_LLM_GATEWAY_TEMPLATES_H_
#define KFORGE_LLM_GATEWAY_TEMPLATES_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace kforge::gateway {

// The templates compiled into this binary, by file name ("contrastive.md"...).
const std::map<std::string, std::string>& EmbeddedTemplates();

class TemplateSet {
 public:
  // The embedded templates, with every regular file of `override_dir` (if not empty) replacing
  // or adding the one of its name. NOT_FOUND when the directory cannot be read.
  static absl::StatusOr<TemplateSet> Load(const std::string& override_dir);
  explicit TemplateSet(std::map<std::string, std::string> files) : files_(std::move(files)) {}

  bool Has(const std::string& name) const { return files_.count(name) != 0; }
  // Replaces each {{name}} by vars[name]. NOT_FOUND when the template does not exist,
  // INVALID_ARGUMENT when it uses a placeholder `vars` lacks (naming it), so a broken override
  // is reported instead of sent to a model.
  absl::StatusOr<std::string> Render(const std::string& name,
                                     const std::map<std::string, std::string>& vars) const;

 private:
  std::map<std::string, std::string> files_;
};

}  // namespace kforge::gateway

#endif  // KFORGE_LLM_GATEWAY_TEMPLATES_H_
