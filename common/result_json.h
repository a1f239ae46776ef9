// The engine's JSON: EvalResult as printed by `kforge-eval --json`, with snake_case field
// names, verdicts and dialects as lower-case words ("ok", "nvrtc"), every field present, and
// `speedup` null unless the verdict is ok. ResultFromJson reads it back.
//
// Thread-safety: pure functions.
#ifndef KFORGE_COMMON_RESULT_JSON_H_
#define KFORGE_COMMON_RESULT_JSON_H_

#include <string>

#include "kforge/v1/eval.pb.h"

namespace kforge {

std::string ResultToJson(const v1::EvalResult& result);
// False (with `error`) when `json` is not an EvalResult.
bool ResultFromJson(const std::string& json, v1::EvalResult* result, std::string* error);

// "ok", "compile_error", ... ; and back.
const char* VerdictName(v1::Verdict v);
// The inverse of VerdictName; VERDICT_UNSPECIFIED for an unknown name.
v1::Verdict VerdictFromName(const std::string& name);

}  // namespace kforge

#endif  // KFORGE_COMMON_RESULT_JSON_H_
