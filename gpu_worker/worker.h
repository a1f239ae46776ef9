// The worker's main loop: register with the coordinator, hold one bidirectional stream,
// run each leased evaluation as a kforge-eval child (one slot per GPU, or --slots in CPU
// mode), build the next leases ahead on the CPUs while the slots run, send results back,
// heartbeat the leases it holds, reconnect with backoff when the coordinator goes away, and
// drain on request (stop taking leases, hand back those not started, finish the running
// ones).
//
// Threading: Run() owns the stream on the calling thread (reads); one thread per slot runs
// evaluations; `prefetch` builder threads run builds ahead; a heartbeat thread writes
// heartbeats; a sampler thread refreshes the per-slot metrics (slot_metrics.h). Stream writes
// are serialised by a mutex.
#ifndef KFORGE_GPU_WORKER_WORKER_H_
#define KFORGE_GPU_WORKER_WORKER_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/tls.h"
#include "gpu_worker/sandbox_view.h"
#include "kforge/v1/eval.pb.h"
#include "kforge/v1/worker.pb.h"
#include "prometheus/registry.h"

namespace kforge {

struct WorkerOptions {
  std::string coordinator;     // gRPC address
  std::string token;           // the worker's API token (role worker); empty: none
  TlsSettings tls;             // how the coordinator is verified (common/tls.h)
  v1::WorkerFacts facts;       // gpu_type, slots, ... (hostname filled in if empty)
  std::string eval_binary;     // path of kforge-eval
  std::string cache_dir;       // shared build cache for the children
  std::string scratch_root = "/tmp";
  bool cpu_mode = false;       // children get --device cpu, else cuda:<slot>
  double extra_wall_s = 60;    // on top of the stage limits for the child's wall clock
  std::string sandbox_user = "nobody";  // when the worker is root; "" keeps the worker's user
  bool require_namespaces = false;      // SandboxPolicy::require_namespaces
  SandboxView sandbox_view;             // SandboxPolicy::view (with root); eval_view.h fills it
  std::vector<std::string> sandbox_executables;  // SandboxPolicy::executables; empty: any
  // PCI bus id of each slot's GPU (index = slot), for the per-slot GPU metrics; empty in CPU
  // mode or when unknown (then only the busy series are exported).
  std::vector<std::string> gpu_pci_bus_ids;
  double metrics_sample_s = 1;  // how often the per-slot metrics are sampled
  // Leases held beyond the slots and built ahead on the CPUs (kforge-eval --build-only, one
  // builder thread each) while the slots time others; 0 turns building ahead off.
  int prefetch = 0;
  std::string arch;  // NVRTC target of the slots' GPUs ("sm_90"), for the builds ahead
};

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
// visible. When `cancel` (if given) becomes true before the fork server answers, the child is
// killed and the result is a runtime_error with rule "cancelled" (builds ahead on a drain: their
// leases go back to the queue). Exposed for tests.
v1::EvalResult RunEvaluation(const WorkerOptions& options, v1::EvalRequest request,
                             const std::string& device,
                             const std::atomic<bool>* cancel = nullptr);

class Worker {
 public:
  Worker(WorkerOptions options, prometheus::Registry& metrics);
  // Runs until `stop` becomes true, then drains and returns.
  void Run(const std::atomic<bool>& stop);

 private:
  WorkerOptions options_;
  prometheus::Registry& metrics_;
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_WORKER_H_
