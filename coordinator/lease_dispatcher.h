// What a coordinator decides on one worker's stream, without gRPC: which leases to offer (the
// worker's capacity, its slots plus the prefetch it asked for, minus the leases outstanding on
// this stream and those its hello says it still holds; none while it drains; an operator's
// drain is the queue's to honour), heartbeats (extend the leases the worker lists), results
// (validated on arrival with result_validation.h: a malformed one is refused and its lease
// requeued with the attempt counted, the evaluation ending after its last attempt; a valid one
// is stored together with the worker's next leases, and only if the lease is still the
// worker's and the result's hashes are the leased task's and candidate's, which the WorkQueue
// decides; a result that names other sources, or that the database refuses as data, is
// refused the same way), and releases. The worker's credentials are checked again at every message
// it sends and, at most once per poll interval, before leases are offered: a revoked or expired
// worker is cut off and its leases requeued. WorkerServiceImpl (worker_service.h) is the gRPC
// adapter that feeds it.
//
// Threading: one dispatcher per stream, driven by two threads: the handler thread in
// RunLeasing (or OfferLeases), which leases for free slots nothing else fills and otherwise
// waits on the Notifier for new work of the worker's GPU type, a freed slot, or the poll
// interval; and the reader thread in Handle, one worker message at a time. Both write to the
// WorkerSender, one message at a time.
//
// Ownership: the queue, notifier, sender, metrics and audit log are borrowed and must outlive
// the dispatcher.
#ifndef KFORGE_COORDINATOR_LEASE_DISPATCHER_H_
#define KFORGE_COORDINATOR_LEASE_DISPATCHER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/audit.h"
#include "coordinator/notifier.h"
#include "coordinator/work_queue.h"
#include "kforge/v1/worker.pb.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace kforge {

// Where the dispatcher's messages to its worker go (the stream).
class WorkerSender {
 public:
  virtual ~WorkerSender() = default;
  // False once the worker can no longer receive. Never called by two threads at once.
  virtual bool Send(const v1::CoordinatorMessage& message) = 0;
};

// The metric families every stream adds to; registered once per service.
struct DispatchMetrics {
  explicit DispatchMetrics(prometheus::Registry& registry);
  prometheus::Family<prometheus::Counter>& results;
  prometheus::Family<prometheus::Counter>& refused;
  prometheus::Family<prometheus::Counter>& leases;
  prometheus::Family<prometheus::Histogram>& queue_wait;
};

struct DispatchSettings {
  std::string worker_id;
  std::string gpu_type;
  int capacity = 1;               // WorkerCapacity()
  std::vector<std::string> held;  // leases the worker holds from an earlier stream
  double lease_timeout_s = 15;
  // How often an idle stream looks at the queue by itself. Work queued by this process wakes
  // it at once; polling only finds work that another coordinator queued.
  double poll_interval_s = 1;
  // A result the queue could not store for a transient error is retried this often, this far
  // apart, before its lease is left to expire (then the evaluation runs again).
  int store_retries = 40;
  absl::Duration store_retry_delay = absl::Milliseconds(250);
};

// Leases a worker may hold at once: its slots, plus the leases it asked to build ahead on its
// CPUs, at most two per slot.
int WorkerCapacity(int slots, uint32_t requested_prefetch);

class LeaseDispatcher {
 public:
  // `check_credentials`: OK, or UNAUTHENTICATED once the worker's token is no longer valid
  // (other errors are ignored). `audit` null: cut-offs are not audited.
  LeaseDispatcher(WorkQueue& queue, Notifier& notifier, WorkerSender& sender,
                  DispatchMetrics& metrics, DispatchSettings settings,
                  std::function<absl::Status()> check_credentials, AuditLog* audit);

  struct Offer {
    bool ended = false;  // the reader ended: no more leases on this stream
    int free = 0;        // slots that were free and nothing else was filling
    int granted = 0;     // leases sent for them
  };
  // One look at the queue for the free slots; leases found are sent. While some stay free,
  // new work of the worker's type wakes the waiter RunLeasing waits on. Ended, with nothing
  // sent, once the worker was cut off (cut_off()).
  Offer OfferLeases();
  // The handler thread: offers leases until `cancelled`, the reader ended or the worker was
  // cut off.
  void RunLeasing(const std::function<bool()>& cancelled);

  // The reader thread: one message from the worker. False when the stream must end (the
  // credentials were revoked; cut_off() says how).
  bool Handle(const v1::WorkerMessage& message);
  // The worker's side ended; RunLeasing returns.
  void ReaderEnded();
  bool reader_done();

  // UNAUTHENTICATED once the worker was cut off during the stream.
  std::optional<absl::Status> cut_off();
  // True when the worker said it was draining and nothing it was sent is unanswered.
  bool Drained();
  // After both threads ended: a worker that drained and left is listed no more.
  void Finish();

 private:
  // False (the worker cut off) once check_credentials says UNAUTHENTICATED; asked at most
  // once per poll interval.
  bool StillValid();
  LeaseRequest Request(int n) const;
  // Takes the free slots for a lease statement: none while draining, -1 once the reader ended.
  int Reserve();
  void Unreserve(int n);
  void Heartbeat(const v1::WorkerMessage::Heartbeat& heartbeat);
  void StoreResult(const v1::WorkerMessage::Result& result);
  // `by_reader`: called from Handle, whose false ends the reader.
  void CutOff(const std::string& why, bool by_reader = false);
  void RefuseResult(const std::string& lease_id, const std::string& reason);
  void Release(const std::string& lease_id);
  // Writes the leases to the worker. Leases it can no longer receive go back to the queue.
  void Send(const Leased& leased);
  bool Write(const v1::CoordinatorMessage& message);

  WorkQueue& queue_;
  Notifier& notifier_;
  WorkerSender& sender_;
  DispatchMetrics& metrics_;
  const DispatchSettings settings_;
  const std::function<absl::Status()> check_credentials_;
  AuditLog* const audit_;
  Notifier::WorkWaiter waiter_;
  prometheus::Counter& leases_granted_;
  prometheus::Histogram& queue_wait_;
  absl::Mutex write_mu_;  // one Send at a time; taken before mu_ where both are held
  absl::Mutex mu_;
  std::set<std::string> outstanding_ ABSL_GUARDED_BY(mu_);
  int reserved_ ABSL_GUARDED_BY(mu_) = 0;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> cut_off_ ABSL_GUARDED_BY(mu_);
  absl::Time checked_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();  // the credentials
};

}  // namespace kforge

#endif  // KFORGE_COORDINATOR_LEASE_DISPATCHER_H_
