#include "gpu_worker/sandbox_evaluator.h"

#include <cstdlib>
#include <memory>
#include <vector>

#include "common/base/log.h"
#include "common/base/subprocess.h"
#include "common/result_json.h"
#include "gpu_worker/eval_server_client.h"
#include "gpu_worker/eval_view.h"
#include "gpu_worker/sandbox.h"

namespace kforge {
namespace {

v1::EvalResult Failure(const std::string& reason, const std::string& rule) {
  v1::EvalResult r;
  r.set_verdict(v1::VERDICT_RUNTIME_ERROR);
  r.set_reason(reason);
  r.set_rule(rule);
  return r;
}

SandboxPolicy PolicyFor(const WorkerOptions& options) {
  SandboxPolicy policy;
  policy.scratch_root = options.scratch_root;
  policy.run_as_user = options.sandbox_user;
  policy.require_namespaces = options.require_namespaces;
  policy.view = options.sandbox_view;
  policy.executables = options.sandbox_executables;
  policy.max_output_bytes = 8 << 20;  // stdout carries the JSON result
  // Bounds a fork bomb while it runs (the PID namespace ends the rest afterwards). Counts the
  // threads of every process of the sandbox user: torch and CUDA start dozens per child.
  policy.processes = 4096;
  return policy;
}

// What the children inherit. TORCH_CUDA_ARCH_LIST (set by main from the GPU) makes
// load_inline's nvcc flags the same in a build ahead, which sees no GPU, as in the timed run;
// CUDA_HOME names the toolkit the sandbox's view and program list hold (eval_view.h);
// KFORGE_SHARE_REFERENCE tells the fork server what to share (reference_share.h);
// KFORGE_CHANNEL_SPIN_US how long the judge and the candidate process poll (channel.h);
// CUDA_MPS_PIPE_DIRECTORY where the node's MPS daemon listens (docs/operations.md, "MPS"; the
// view holds that directory, read-only: eval_view.h).
std::vector<std::string> ExtraEnv(bool build_only = false) {
  std::vector<std::string> env = CudaToolkitEnv();
  std::vector<const char*> names = {"KFORGE_PYTHONPATH", "TORCH_CUDA_ARCH_LIST",
                                    "KFORGE_SHARE_REFERENCE", "KFORGE_CHANNEL_SPIN_US"};
  if (!build_only) names.insert(names.end(), {"CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY"});
  for (const char* name : names) {
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  }
  if (build_only) env.push_back("CUDA_VISIBLE_DEVICES=");  // builds never touch a GPU
  return env;
}

}  // namespace

absl::Status CheckSandbox(const WorkerOptions& options) {
  SandboxPolicy policy = PolicyFor(options);
  policy.wall_limit_s = 60;
  SubprocessResult r = RunSandboxed(policy, {options.eval_binary, "--help"}, ExtraEnv());
  if (r.Succeeded()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "a sandboxed child cannot run " + options.eval_binary + " as user '" + options.sandbox_user +
      "' (" + r.Describe() + "): " + r.error + r.stderr_data.substr(0, 500) +
      "; make the binary, its libraries and the cache readable by that user, or run the "
      "worker with --sandbox_user= to keep its own user");
}

double EvaluationWallLimitS(const v1::EvalRequest& request, double extra_wall_s) {
  const auto& lim = request.limits();
  double limit = (lim.build_s() > 0 ? lim.build_s() : 120) + extra_wall_s;
  if (!request.build_only()) {
    limit += (lim.correctness_s() > 0 ? lim.correctness_s() : 120) +
             (lim.timing_s() > 0 ? lim.timing_s() : 60) + 180;
  }
  return limit;
}

v1::EvalResult RunEvaluation(const WorkerOptions& options, v1::EvalRequest request,
                             const std::string& device, const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) return Failure("cancelled before it started", "cancelled");
  request.set_device(device);
  // The request goes in on stdin, the JSON result comes back on stdout: no files to share
  // with a child that may run as another user.
  std::vector<std::string> argv = {options.eval_binary, "--request", "-"};
  if (!options.cache_dir.empty()) {
    argv.push_back("--cache-dir");
    argv.push_back(options.cache_dir);
  }
  SandboxPolicy policy = PolicyFor(options);
  policy.wall_limit_s = EvaluationWallLimitS(request, options.extra_wall_s);
  const std::vector<std::string> env = ExtraEnv(request.build_only());
  // One fork server per slot thread (eval_server_client.h); KFORGE_EVAL_SERVER=off disables it.
  const char* use_server = std::getenv("KFORGE_EVAL_SERVER");
  if (!use_server || std::string(use_server) != "off") {
    thread_local std::unique_ptr<EvalServerClient> server;
    if (!server) {
      server = std::make_unique<EvalServerClient>(
          EvalServerConfig{policy, options.eval_binary, options.cache_dir, env});
    }
    std::string why;
    bool cancelled = false;
    if (auto result = server->Evaluate(request, policy.wall_limit_s, &why, cancel, &cancelled)) {
      return *result;
    }
    if (cancelled) return Failure("cancelled: " + why, "cancelled");
    LogWarning("fork server unavailable, evaluating in a one-shot child", {{"why", why}});
  }
  SubprocessResult run = RunSandboxed(policy, argv, env, request.SerializeAsString());
  v1::EvalResult result;
  std::string error;
  if (run.Succeeded() && ResultFromJson(run.stdout_data, &result, &error)) return result;
  std::string tail = run.stderr_data.size() > 2000
                         ? run.stderr_data.substr(run.stderr_data.size() - 2000)
                         : run.stderr_data;
  return Failure("kforge-eval produced no result (" + run.Describe() + "): " + tail,
                 run.timed_out ? "worker_timeout" : "engine_error");
}

}  // namespace kforge
