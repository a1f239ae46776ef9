// A measurement switch from the evaluation's environment (KFORGE_CALL_PROFILE,
// KFORGE_PREROLL_SHRINK: docs/operations.md): on where it is set to anything but "" or "0".
#ifndef KFORGE_GPU_WORKER_EVAL_ENV_SWITCH_H_
#define KFORGE_GPU_WORKER_EVAL_ENV_SWITCH_H_

#include <cstdlib>
#include <cstring>

namespace kforge::eval {

inline bool EnvSwitchOn(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_ENV_SWITCH_H_
