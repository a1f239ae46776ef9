// How the worker's slots and builders run one evaluation request. SandboxEvaluator
// (sandbox_evaluator.h) runs kforge-eval in a sandbox; unit tests use a fake that answers
// without any child process.
//
// Thread-safety: Evaluate is called from every slot and builder thread at once.
#ifndef KFORGE_GPU_WORKER_EVALUATOR_H_
#define KFORGE_GPU_WORKER_EVALUATOR_H_

#include <atomic>
#include <string>

#include "kforge/v1/eval.pb.h"

namespace kforge {

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // The request's result on `device` ("cuda:<slot>" or "cpu"); a runtime_error result saying
  // why when no verdict came. When `cancel` (if given) becomes true before the result, the
  // result is a runtime_error with rule "cancelled".
  virtual v1::EvalResult Evaluate(v1::EvalRequest request, const std::string& device,
                                  const std::atomic<bool>* cancel) = 0;
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_EVALUATOR_H_
