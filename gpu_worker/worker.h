// The worker: wires its units together and runs them until drained. A CoordinatorSession
// (coordinator_session.h) registers, holds one stream to the coordinator at a time, heartbeats,
// reconnects with backoff and drains on request; leases it reads wait in the LeaseQueue
// (lease_queue.h); the Slots (slots.h) run them as sandboxed kforge-eval children
// (sandbox_evaluator.h), one slot per GPU or --slots in CPU mode; the Builders (builders.h)
// build the next leases ahead on the CPUs while the slots run; results go back through the
// session, or wait in the queue's outbox for the next connection.
//
// Threading: Run() runs the session on the calling thread; one thread per slot, one per
// builder, a heartbeat thread per connection, and a sampler thread refreshing the per-slot
// metrics (slot_metrics.h).
#ifndef KFORGE_GPU_WORKER_WORKER_H_
#define KFORGE_GPU_WORKER_WORKER_H_

#include <atomic>
#include <string>
#include <vector>

#include "gpu_worker/worker_options.h"
#include "prometheus/registry.h"

namespace kforge {

// The device of each of the worker's slots (options.facts.slots() of them): "cpu" in CPU mode,
// else "cuda:<slot / lanes_per_gpu>", so the lanes of one GPU are adjacent slots.
std::vector<std::string> SlotDevices(const WorkerOptions& options);

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
