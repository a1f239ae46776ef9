// Checks that a submitted task is in KernelBench's format before it is stored: a Python
// source defining `class Model`, `get_inputs()` and `get_init_inputs()`. The real proof is
// the engine loading it; this catches what a client obviously got wrong, with a clear message.
//
// Pure functions; thread-safe.
#ifndef KFORGE_COORDINATOR_TASK_VALIDATION_H_
#define KFORGE_COORDINATOR_TASK_VALIDATION_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace kforge {

inline constexpr size_t kMaxTaskSourceBytes = 1 << 20;

// INVALID_ARGUMENT naming what is missing or wrong (empty, too large, not UTF-8, a NUL
// byte, no Model, get_inputs or get_init_inputs); OK otherwise.
absl::Status ValidateTaskSource(const std::string& source);

// INVALID_ARGUMENT "<what> is not valid UTF-8 (byte N)" for text that arrived as bytes.
absl::Status ValidateUtf8(std::string_view text, const std::string& what);

// INVALID_ARGUMENT "<what> 'X' is not a UUID" unless `text` is one (8-4-4-4-12 hex digits),
// so that an id PostgreSQL cannot read is refused with a message of ours.
absl::Status ValidateUuid(std::string_view text, const std::string& what);
bool IsUuid(std::string_view text);

// A worker's registration (WorkerFacts): gpu_type 1..64 characters of [A-Za-z0-9._-] (what
// the worker derives from the device name, "H200", "RTX3090", "cpu", and the Helm chart's pool
// names), hostname 1..255 printable ASCII characters other than space. Registered types are
// listed in every tenant's "no worker pool serves" error and label the metrics, so they must be
// short. INVALID_ARGUMENT naming the field (its value cut to 64 bytes) otherwise.
inline constexpr size_t kMaxGpuTypeChars = 64;
inline constexpr size_t kMaxHostnameChars = 255;
bool IsGpuTypeName(std::string_view text);
absl::Status ValidateWorkerNames(std::string_view gpu_type, std::string_view hostname);

// A task's judging options: precision fp32, fp16 or bf16 (or empty); atol and rtol 0 (the
// precision's default) or finite within (0, kMaxTolerance]; at most kMaxTrials trials; policy
// strict or runtime (or empty); speedup_clock device or call (or empty: call); numerics fp32 or
// torch (or empty: fp32).
inline constexpr double kMaxTolerance = 1;
inline constexpr uint32_t kMaxTrials = 100;
absl::Status ValidateTaskOptions(const std::string& precision, double atol, double rtol,
                                 uint32_t trials, const std::string& policy = "",
                                 const std::string& speedup_clock = "",
                                 const std::string& numerics = "");

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_TASK_VALIDATION_H_
