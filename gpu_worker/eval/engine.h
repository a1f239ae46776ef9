// The evaluation of one candidate against one task, inside the supervised child process:
// load the task and its reference model, build the candidate, check it over several trials
// with fresh secret-seeded inputs, time both interleaved, and decide the verdict.
//
// Everything that decides a verdict or a time is C++ (seeds, comparisons, events, L2 flush,
// statistics); Python runs only the task's and the candidate's own code.
//
// Thread-safety: runs on the main thread of the child; owns the embedded interpreter.
#ifndef KFORGE_GPU_WORKER_EVAL_ENGINE_H_
#define KFORGE_GPU_WORKER_EVAL_ENGINE_H_

#include <chrono>
#include <string>

#include "gpu_worker/eval/supervisor.h"
#include "kforge/v1/eval.pb.h"

namespace kforge::eval {

struct EngineContext {
  std::string cache_dir;  // NVRTC cubins and load_inline builds, keyed by content hash
  std::chrono::steady_clock::time_point process_start;
  double timing_budget_s = 40;  // stop sampling after this long
  double timing_limit_s = 60;   // the timing stage's limit (the supervisor's)
};

v1::EvalResult Evaluate(const v1::EvalRequest& request, const EngineContext& context,
                        StageReporter& reporter);

}  // namespace kforge::eval

#endif  // KFORGE_GPU_WORKER_EVAL_ENGINE_H_
