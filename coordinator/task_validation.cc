#include "coordinator/task_validation.h"

#include <regex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kforge {

absl::Status ValidateTaskSource(const std::string& source) {
  if (source.empty()) return absl::InvalidArgumentError("task source is empty");
  if (source.size() > kMaxTaskSourceBytes) {
    return absl::InvalidArgumentError(absl::StrCat("task source is ", source.size(),
                                                   " bytes; the limit is ", kMaxTaskSourceBytes));
  }
  if (source.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("task source contains a NUL byte");
  }
  struct Required {
    const char* what;
    std::regex pattern;
  };
  static const auto* required = new std::vector<Required>{
      {"class Model", std::regex(R"((^|\n)class\s+Model\s*[\(:])")},
      {"def get_inputs()", std::regex(R"((^|\n)def\s+get_inputs\s*\()")},
      {"def get_init_inputs()", std::regex(R"((^|\n)def\s+get_init_inputs\s*\()")},
  };
  std::vector<std::string> missing;
  for (const auto& r : *required) {
    if (!std::regex_search(source, r.pattern)) missing.push_back(r.what);
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a KernelBench task: missing top-level ", absl::StrJoin(missing, ", ")));
  }
  return absl::OkStatus();
}

}  // namespace kforge
