// The worker's session with the coordinator, over a CoordinatorLink (coordinator_link.h):
// register (once; the id is kept across reconnects so results of earlier leases still count,
// and dropped when the coordinator no longer knows the worker or knows it under another
// identity), connect, say hello (worker id, the prefetch asked for, the leases still held),
// send the results that waited in the outbox, heartbeat (held leases, free capacity, draining),
// read leases into the LeaseQueue, and reconnect with backoff (doubling from
// initial_backoff_s up to max_backoff_s; reset by any message read) when the coordinator goes
// away. On `stop` it drains: the heartbeat announces it at once and hands the queued leases
// back, leases arriving later are handed back too, and the session ends once nothing is
// queued, running or undelivered, or drain_timeout_s after the stop when results still cannot
// be delivered (their leases expire and run again elsewhere).
//
// It is the ResultWriter of the slots and builders: a result goes on the current stream, or
// into the outbox when there is none.
//
// Threading: Run() owns the session on the calling thread (it reads the stream); each
// connection has a heartbeat thread. Write may be called from any thread. The link and the
// lease queue are borrowed and must outlive the session.
#ifndef KFORGE_GPU_WORKER_COORDINATOR_SESSION_H_
#define KFORGE_GPU_WORKER_COORDINATOR_SESSION_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gpu_worker/coordinator_link.h"
#include "gpu_worker/lease_queue.h"
#include "kforge/v1/worker.pb.h"

namespace kforge {

struct SessionOptions {
  v1::WorkerFacts facts;  // registered as they are; facts.slots counts the slots
  int prefetch = 0;       // leases asked for beyond the slots (hello), and counted as capacity
  double initial_backoff_s = 0.2;
  double max_backoff_s = 10;
  double drain_timeout_s = 60;
  double default_heartbeat_interval_s = 2;  // until the registration says otherwise
  // Waits between attempts; tests pass one that records instead of sleeping.
  std::function<void(double seconds)> sleep;
};

class CoordinatorSession : public ResultWriter {
 public:
  CoordinatorSession(CoordinatorLink& link, LeaseQueue& leases, SessionOptions options);

  // Runs until `stop` becomes true and the drain ended (see above).
  void Run(const std::atomic<bool>& stop);

  // ResultWriter: on the current stream; false when there is none or it broke.
  bool Write(const v1::WorkerMessage& message) override;

  // The id the coordinator gave at registration; empty before (or after it was dropped).
  std::string worker_id();

 private:
  // Registers when there is no id yet; false (after the backoff) when it failed.
  bool EnsureRegistered();
  // One connection, from hello to the stream's end; returns how it ended.
  absl::Status Connect(const std::atomic<bool>& stop, bool* got_any);
  void Heartbeats(CoordinatorStream& stream, const std::atomic<bool>& stop,
                  const std::atomic<bool>& session_over);
  void Backoff();

  CoordinatorLink& link_;
  LeaseQueue& leases_;
  const SessionOptions options_;
  double backoff_s_;
  double heartbeat_interval_s_;
  absl::Mutex mu_;
  std::string worker_id_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<CoordinatorStream> current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_COORDINATOR_SESSION_H_
