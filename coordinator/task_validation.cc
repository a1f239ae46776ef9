#include "coordinator/task_validation.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/utf8.h"

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
  if (absl::Status s = ValidateUtf8(source, "task source"); !s.ok()) return s;
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

absl::Status ValidateUtf8(std::string_view text, const std::string& what) {
  if (std::optional<size_t> bad = FirstInvalidUtf8(text)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not valid UTF-8 (byte ", *bad, ")"));
  }
  return absl::OkStatus();
}

bool IsUuid(std::string_view text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (text[i] == '-')) return false;
    if (!dash && !std::isxdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

absl::Status ValidateUuid(std::string_view text, const std::string& what) {
  if (IsUuid(text)) return absl::OkStatus();
  std::string shown(text.substr(0, 64));
  if (FirstInvalidUtf8(shown)) shown = "(not UTF-8)";
  return absl::InvalidArgumentError(absl::StrCat(what, " '", shown, "' is not a UUID"));
}

bool IsGpuTypeName(std::string_view text) {
  if (text.empty() || text.size() > kMaxGpuTypeChars) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

absl::Status ValidateWorkerNames(std::string_view gpu_type, std::string_view hostname) {
  auto shown = [](std::string_view text) {
    std::string out = PrintableUtf8(text.substr(0, 64));
    return text.size() > 64 ? out + "..." : out;
  };
  if (!IsGpuTypeName(gpu_type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "facts.gpu_type '", shown(gpu_type), "' (", gpu_type.size(), " bytes) must be 1..",
        kMaxGpuTypeChars, " characters of A-Z, a-z, 0-9, '.', '_' and '-'"));
  }
  const bool printable = std::all_of(hostname.begin(), hostname.end(), [](char c) {
    return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f;
  });
  if (hostname.empty() || hostname.size() > kMaxHostnameChars || !printable) {
    return absl::InvalidArgumentError(absl::StrCat(
        "facts.hostname '", shown(hostname), "' (", hostname.size(), " bytes) must be 1..",
        kMaxHostnameChars, " printable ASCII characters without spaces"));
  }
  return absl::OkStatus();
}

namespace {

// INVALID_ARGUMENT "options.<field> must be A or B, not 'X'" unless `value` is empty, `a` or
// `b`; X is cut to 64 bytes, and named "(not UTF-8)" when it is not text.
absl::Status EmptyOrOneOf(const char* field, const std::string& value, const char* a,
                          const char* b) {
  if (value.empty() || value == a || value == b) return absl::OkStatus();
  std::string shown = value.substr(0, 64);
  if (FirstInvalidUtf8(shown)) shown = "(not UTF-8)";
  return absl::InvalidArgumentError(
      absl::StrCat("options.", field, " must be ", a, " or ", b, ", not '", shown, "'"));
}

}  // namespace

absl::Status ValidateTaskOptions(const std::string& precision, double atol, double rtol,
                                 uint32_t trials, const std::string& policy,
                                 const std::string& speedup_clock, const std::string& numerics) {
  if (absl::Status s = EmptyOrOneOf("policy", policy, "strict", "runtime"); !s.ok()) return s;
  if (absl::Status s = EmptyOrOneOf("numerics", numerics, "fp32", "torch"); !s.ok()) return s;
  if (absl::Status s = EmptyOrOneOf("speedup_clock", speedup_clock, "device", "call"); !s.ok()) {
    return s;
  }
  if (!precision.empty() && precision != "fp32" && precision != "fp16" && precision != "bf16") {
    return absl::InvalidArgumentError(
        absl::StrCat("options.precision must be fp32, fp16 or bf16, not '", precision, "'"));
  }
  for (const auto& [name, v] : {std::pair<const char*, double>{"atol", atol}, {"rtol", rtol}}) {
    // Written so that NaN fails too.
    if (!(v == 0 || (v > 0 && v <= kMaxTolerance))) {
      return absl::InvalidArgumentError(absl::StrCat("options.", name, " is ", v,
                                                     "; it must be 0 (the default) or within "
                                                     "(0, ", kMaxTolerance, "]"));
    }
  }
  if (trials > kMaxTrials) {
    return absl::InvalidArgumentError(absl::StrCat("options.correctness_trials is ", trials,
                                                   "; at most ", kMaxTrials));
  }
  return absl::OkStatus();
}

}  // namespace kforge
