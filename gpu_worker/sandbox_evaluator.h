// Runs evaluation requests as sandboxed kforge-eval children (sandbox.h): through one fork
// server per calling thread (eval_server_client.h; KFORGE_EVAL_SERVER=off disables it), or a
// one-shot child per request when the server cannot be used. Build-only requests run with no
// GPU visible.
//
// Thread-safety: Evaluate may be called from many threads at once; each thread keeps its own
// fork server for the life of the thread.
#ifndef KFORGE_GPU_WORKER_SANDBOX_EVALUATOR_H_
#define KFORGE_GPU_WORKER_SANDBOX_EVALUATOR_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpu_worker/evaluator.h"
#include "gpu_worker/sandbox.h"
#include "gpu_worker/worker_options.h"
#include "kforge/v1/eval.pb.h"

namespace kforge {

// Checks that a sandboxed child can run kforge-eval (binary, libraries, Python packages and
// cache reachable by the sandbox user). The error says what to fix.
absl::Status CheckSandbox(const WorkerOptions& options);

// The wall-clock limit of the kforge-eval child for `request`: its stage limits (the engine's
// defaults, 120 s build, 120 s correctness, 60 s timing, for those at 0) plus 180 s of start-up
// and checks for a full evaluation, plus `extra_wall_s`. With the defaults (the coordinator sets
// no stage limits) it is 540 s: the longest one evaluation runs on a worker, which the Helm
// chart's workerDefaults.evaluationLimitSeconds names and its grace period exceeds
// (worker_test checks that they agree).
double EvaluationWallLimitS(const v1::EvalRequest& request, double extra_wall_s);

// Evaluates one request in a sandboxed kforge-eval child and returns its result, or a
// runtime_error result saying why the child gave none. A build_only request runs with no GPU
// visible. With turns (options.gpu_lock_dir) an evaluation that is not build-only runs in its
// device's turn: its fork server takes it, and a one-shot child's turn is held here for the
// child's whole run. When `cancel` (if given) becomes true before the fork server answers, the
// child is killed and the result is a runtime_error with rule "cancelled" (builds ahead on a
// drain: their leases go back to the queue).
v1::EvalResult RunEvaluation(const WorkerOptions& options, v1::EvalRequest request,
                             const std::string& device, const std::atomic<bool>* cancel = nullptr);

// GPU turns (docs/evaluation.md, "GPU turns"): a private directory (0700, the worker's) under
// `root` holding one lock file per device of `devices` (repeats are one device), for
// WorkerOptions::gpu_lock_dir. Claimed while the returned object lives, so that a sweep
// (SweepStaleScratch) removes it only once its worker is gone.
// Sandboxed evaluations never see it: their fork servers get the lock as a descriptor.
struct GpuLockDir {
  std::string path;
  DirectoryClaim claim;
};
absl::StatusOr<GpuLockDir> MakeGpuLockDir(const std::string& root,
                                          const std::vector<std::string>& devices);
// The lock file of `device` ("cuda:1" or "cpu") in `lock_dir`; empty without one (no turns).
std::string GpuLockPath(const std::string& lock_dir, const std::string& device);

class SandboxEvaluator : public Evaluator {
 public:
  explicit SandboxEvaluator(WorkerOptions options) : options_(std::move(options)) {}
  v1::EvalResult Evaluate(v1::EvalRequest request, const std::string& device,
                          const std::atomic<bool>* cancel) override {
    return RunEvaluation(options_, std::move(request), device, cancel);
  }

 private:
  const WorkerOptions options_;
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_SANDBOX_EVALUATOR_H_
