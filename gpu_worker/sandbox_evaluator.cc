#include "gpu_worker/sandbox_evaluator.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "common/base/files.h"
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
// KFORGE_STRAYS_WAIT_S how long an evaluation's processes may outlive their SIGKILL (tests;
// supervisor.h);
// CUDA_MPS_PIPE_DIRECTORY where the node's MPS daemon listens (docs/operations.md, "MPS"; the
// view holds that directory, read-only: eval_view.h).
std::vector<std::string> ExtraEnv(bool build_only = false) {
  std::vector<std::string> env = CudaToolkitEnv();
  std::vector<const char*> names = {"KFORGE_PYTHONPATH", "TORCH_CUDA_ARCH_LIST",
                                    "KFORGE_SHARE_REFERENCE", "KFORGE_CHANNEL_SPIN_US",
                                    "KFORGE_STRAYS_WAIT_S"};
  if (!build_only) names.insert(names.end(), {"CUDA_VISIBLE_DEVICES", "CUDA_MPS_PIPE_DIRECTORY"});
  for (const char* name : names) {
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  }
  if (build_only) env.push_back("CUDA_VISIBLE_DEVICES=");  // builds never touch a GPU
  // torch.compile's Inductor compiles in process: its worker pool would exec Python, which the
  // program list (SandboxPolicy::executables) does not hold (docs/security.md says why the
  // list is a policy, not a boundary).
  env.push_back("TORCHINDUCTOR_COMPILE_THREADS=1");
  return env;
}

// How long an evaluation may wait for its turn: --gpu_wait_s, or kforge-eval's default.
double TurnWaitS(const WorkerOptions& options) {
  return options.gpu_wait_s > 0 ? options.gpu_wait_s : 900;
}

// A one-shot child cannot take turns itself (only a fork server's supervisor can): the slot's
// thread holds its device's turn for the child's whole run, contexts included.
class OneShotTurn {
 public:
  OneShotTurn(const std::string& lock_path, double wait_s) {
    if (lock_path.empty()) return;
    fd_ = open(lock_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd_ < 0) {
      error_ = "the GPU's lock file " + lock_path + " did not open: " + strerror(errno);
      rule_ = "engine_error";
      return;
    }
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
    while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (std::chrono::steady_clock::now() > until) {
        error_ = "the GPU's turn was not given within " + std::to_string(wait_s) + " s";
        rule_ = "gpu_turn_timeout";
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~OneShotTurn() {
    if (fd_ >= 0) close(fd_);  // releases the flock
  }
  OneShotTurn(const OneShotTurn&) = delete;
  OneShotTurn& operator=(const OneShotTurn&) = delete;
  const std::string& error() const { return error_; }
  const std::string& rule() const { return rule_; }

 private:
  int fd_ = -1;
  std::string error_, rule_;
};

}  // namespace

absl::StatusOr<GpuLockDir> MakeGpuLockDir(const std::string& root,
                                          const std::vector<std::string>& devices) {
  GpuLockDir dir{root + "/kforge-gpu-turns-XXXXXX", {}};
  if (mkdtemp(dir.path.data()) == nullptr) {
    return absl::InternalError("cannot make the GPU turns' directory under " + root + ": " +
                               strerror(errno));
  }
  std::string error;
  if (!dir.claim.Claim(dir.path, &error)) {
    RemoveTree(AT_FDCWD, dir.path);
    return absl::InternalError(error);
  }
  for (const std::string& device : devices) {
    const std::string path = GpuLockPath(dir.path, device);
    const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      return absl::InternalError("cannot make the GPU lock file " + path + ": " + strerror(errno));
    }
    close(fd);
  }
  return dir;
}

std::string GpuLockPath(const std::string& lock_dir, const std::string& device) {
  if (lock_dir.empty()) return "";
  std::string name = device;
  std::replace(name.begin(), name.end(), ':', '-');
  return lock_dir + "/" + name + ".lock";
}

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
  // A build runs candidate code before a turn could be taken: builds take none.
  const std::string lock = request.build_only() ? "" : GpuLockPath(options.gpu_lock_dir, device);
  // One fork server per slot thread (eval_server_client.h); KFORGE_EVAL_SERVER=off disables it.
  const char* use_server = std::getenv("KFORGE_EVAL_SERVER");
  if (!use_server || std::string(use_server) != "off") {
    thread_local std::unique_ptr<EvalServerClient> server;
    thread_local std::string server_lock;  // the lock its server takes turns on
    if (server && server_lock != lock) server.reset();
    if (!server) {
      EvalServerConfig config;
      config.policy = policy;
      config.eval_binary = options.eval_binary;
      config.cache_dir = options.cache_dir;
      config.extra_env = env;
      config.gpu_lock_path = lock;
      config.gpu_wait_s = options.gpu_wait_s;
      server = std::make_unique<EvalServerClient>(std::move(config));
      server_lock = lock;
    }
    std::string why;
    bool cancelled = false;
    // With turns the server may wait for its turn first (--gpu-wait-s), besides the stray
    // processes' 30 s: neither counts against the evaluation's own limits.
    const double deadline_s = policy.wall_limit_s + (lock.empty() ? 0 : TurnWaitS(options) + 30);
    if (auto result = server->Evaluate(request, deadline_s, &why, cancel, &cancelled)) {
      return *result;
    }
    if (cancelled) return Failure("cancelled: " + why, "cancelled");
    LogWarning("fork server unavailable, evaluating in a one-shot child", {{"why", why}});
  }
  OneShotTurn turn(lock, TurnWaitS(options));
  if (!turn.error().empty()) return Failure(turn.error(), turn.rule());
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
