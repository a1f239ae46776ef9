// Checks that a submitted task is in KernelBench's format before it is stored: a Python
// source defining `class Model`, `get_inputs()` and `get_init_inputs()`. The real proof is
// the engine loading it; this catches what a client obviously got wrong, with a clear message.
//
// Pure functions; thread-safe.
#ifndef KFORGE_COORDINATOR_TASK_VALIDATION_H_
#define KFORGE_COORDINATOR_TASK_VALIDATION_H_

#include <string>

#include "absl/status/status.h"

namespace kforge {

inline constexpr size_t kMaxTaskSourceBytes = 1 << 20;

// INVALID_ARGUMENT naming what is missing; OK otherwise.
absl::Status ValidateTaskSource(const std::string& source);

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_TASK_VALIDATION_H_
