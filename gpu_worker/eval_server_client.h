// The worker's side of the fork server (gpu_worker/eval/serve.h): one `kforge-eval --serve`
// per slot, started lazily in the same sandbox as a one-shot evaluation child, so a request
// costs a fork and a CUDA context instead of a process start and `import torch`.
//
// The sandbox API pumps a child's stdio only until it exits, so requests and results travel
// over two FIFOs the server creates in its scratch directory ("requests", "results"); the
// server removes their names once both ends are open. The server's own stdout/stderr are
// drained by a waiter thread that also notices when it ends.
//
// Evaluate() returns nothing (with the reason) when the server cannot be used: it did not
// start, it died or broke the protocol mid-request, or it answered nothing before the
// deadline (then it is killed). The caller falls back to a one-shot child and logs why; the
// next Evaluate() starts a fresh server.
//
// A result with rule outlived_kill ends the server (it stops after answering it): the next
// Evaluate() starts a fresh one.
//
// With `gpu_lock_path` the server takes turns on the GPU with the other lanes of its GPU
// and refuses build-only requests.
//
// Thread-safety: one client per slot, used by that slot's thread only. Ownership: the client
// owns its server; destroying it closes the request channel (the server exits at the end of
// its input), kills what is left and joins the waiter.
#ifndef KFORGE_GPU_WORKER_EVAL_SERVER_CLIENT_H_
#define KFORGE_GPU_WORKER_EVAL_SERVER_CLIENT_H_

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpu_worker/sandbox.h"
#include "kforge/v1/eval.pb.h"

namespace kforge {

struct EvalServerConfig {
  SandboxPolicy policy;            // the one-shot child's policy; its wall limit is not used
  std::string eval_binary;
  std::string cache_dir;
  std::vector<std::string> extra_env;
  double start_timeout_s = 120;    // until the server opened its channel
  // GPU turns (docs/evaluation.md, "GPU turns"): the lock file of the slot's GPU, shared by
  // the servers of its lanes. Opened for each server (an open file description of its own),
  // passed as `--gpu-lock-fd` (SandboxPolicy::pass_fd), never by path. Empty: no turns.
  std::string gpu_lock_path;
  double gpu_wait_s = 0;  // --gpu-wait-s; 0: the server's default
};

class EvalServerClient {
 public:
  explicit EvalServerClient(EvalServerConfig config);
  ~EvalServerClient();
  EvalServerClient(const EvalServerClient&) = delete;
  EvalServerClient& operator=(const EvalServerClient&) = delete;

  // One evaluation through the server; `deadline_s` bounds the whole round trip. When `cancel`
  // (if given) becomes true before the answer starts, the server is killed (at most ~0.1 s
  // later), *cancelled is set and nothing is returned.
  std::optional<v1::EvalResult> Evaluate(const v1::EvalRequest& request, double deadline_s,
                                         std::string* why_not,
                                         const std::atomic<bool>* cancel = nullptr,
                                         bool* cancelled = nullptr);
  // The server's pid (its sandbox's relay), -1 when none runs. For tests.
  pid_t server_pid() const { return running_ ? pid_ : -1; }

 private:
  bool Start(std::string* why_not);
  void Stop(bool kill_now);
  bool WriteRequest(const std::string& bytes, double timeout_s);

  EvalServerConfig config_;
  std::unique_ptr<Sandboxed> sandbox_;
  std::thread waiter_;             // runs sandbox_->Wait() for the server's lifetime
  std::atomic<bool> running_{false};
  pid_t pid_ = -1;
  int request_fd_ = -1;
  int result_fd_ = -1;
  std::string last_stderr_;        // of the last server that ended, for the fallback's log
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_EVAL_SERVER_CLIENT_H_
