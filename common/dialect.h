// Candidate dialects by name, and inference of a candidate's dialect from its source.
//
// Pure functions; thread-safe. Shared by the engine and the coordinator.
#ifndef KFORGE_COMMON_DIALECT_H_
#define KFORGE_COMMON_DIALECT_H_

#include <string>

#include "kforge/v1/eval.pb.h"

namespace kforge {

// "kernelbench", "nvrtc", "cpp" ("unspecified" otherwise); and back.
const char* DialectName(v1::Dialect d);
bool ParseDialect(const std::string& name, v1::Dialect* out);

// Infers a candidate's dialect: an explicit `kforge: dialect=NAME` marker in the first lines
// wins; then load_inline -> kernelbench, kforge.cuda -> nvrtc, C++ with a forward -> cpp;
// otherwise kernelbench (a plain PyTorch ModelNew).
v1::Dialect InferDialect(const std::string& source);

}  // namespace kforge

#endif  // KFORGE_COMMON_DIALECT_H_
