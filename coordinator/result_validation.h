// Checks an evaluation result a worker delivers before anything of it is stored: the verdict
// is one of the six, numbers are consistent with it (a speedup only with `ok`, and an `ok`
// always with one; timings finite and positive where a program was timed; no NaN or infinity
// where a number is measured), the two clocks agree with it (each clock's speedup only with
// `ok` and equal to its timings' ratio; an `ok` names its clock, device or call, whose speedup
// is `speedup`, inside its confidence interval when one is given), every string at any depth
// is UTF-8 without NUL (what PostgreSQL's text and jsonb can hold), and sizes are bounded. A
// worker is a network peer: what it sends is input, not truth (docs/security.md, "Results").
//
// Pure functions; thread-safe.
#ifndef KFORGE_COORDINATOR_RESULT_VALIDATION_H_
#define KFORGE_COORDINATOR_RESULT_VALIDATION_H_

#include <cstddef>

#include "absl/status/status.h"
#include "kforge/v1/eval.pb.h"

namespace kforge {

struct ResultLimits {
  size_t max_result_bytes = 8 << 20;  // the whole serialized EvalResult
  size_t max_reason_bytes = 64 << 10;
  size_t max_log_bytes = 1 << 20;     // compiler_log and output_log, each
  int max_samples = 100000;           // each repeated sample field of a TimingStats
  // Every speedup must equal its reference median / candidate median within this relative
  // error, and `speedup` the speedup of the clock it names.
  double speedup_rel_tolerance = 1e-3;
};

// OK, or INVALID_ARGUMENT whose message names the first field that is wrong and why.
absl::Status ValidateResult(const v1::EvalResult& result, const ResultLimits& limits = {});

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_RESULT_VALIDATION_H_
