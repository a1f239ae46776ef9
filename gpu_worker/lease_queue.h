// The worker's leases from arrival to delivered result. A lease arrives queued; a builder may
// build it ahead on the CPUs while it waits; a slot takes it (a built one first) and runs it;
// its result is answered on the coordinator stream, or waits in the outbox for the next
// connection when no stream takes it. A lease is "held" (listed in heartbeats and in the next
// hello) from arrival until answered, "running" from a slot or a final build taking it until
// its result was written or put in the outbox, so a drain waits for it. Draining hands the
// queued leases back and refuses new ones; Close() ends the slots' and builders' waits.
//
// Thread-safe: one mutex; TakeForSlot and TakeForBuild block the calling thread until there is
// work or the queue is closed. ResultWriter::Write is called without the mutex held.
#ifndef KFORGE_GPU_WORKER_LEASE_QUEUE_H_
#define KFORGE_GPU_WORKER_LEASE_QUEUE_H_

#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "kforge/v1/worker.pb.h"

namespace kforge {

// Where answered results go: the current coordinator stream (coordinator_session.h).
class ResultWriter {
 public:
  virtual ~ResultWriter() = default;
  // False when there is no stream to take it now. Thread-safe.
  virtual bool Write(const v1::WorkerMessage& message) = 0;
};

class LeaseQueue {
 public:
  // `slots`: the idle slots take the oldest queued leases, so builders leave that many alone.
  explicit LeaseQueue(int slots) : slots_(slots) {}

  // A lease from the coordinator. nullopt while draining (the caller hands it back), else the
  // number of leases now held.
  std::optional<size_t> Add(const v1::Lease& lease);

  struct SlotWork {
    v1::Lease lease;
    bool built_ahead = false;
  };
  // For a slot: a built lease first, else the oldest whose build has not started (one being
  // built is waited for rather than built twice). Counts it running. nullopt once closed.
  std::optional<SlotWork> TakeForSlot();
  // For a builder: the oldest lease not being built that no idle slot is about to take, marked
  // as being built. nullopt once closed.
  std::optional<v1::Lease> TakeForBuild();
  // A build ahead ended. `final` (a verdict no timed run can change): when the lease is still
  // queued it leaves the queue counted running and true is returned: answer it. Otherwise the
  // lease, if still queued, is marked built.
  bool FinishBuild(const std::string& lease_id, bool final);
  // Answers a running lease: no longer held once answered (the next lease may arrive as soon
  // as the result does), running until written or kept in the outbox (a drain waits for it).
  void Answer(const std::string& lease_id, v1::EvalResult result, ResultWriter& writer);

  // Starts draining (once): returns the queued leases, no longer held, to hand back; later
  // calls return none. From now on Add refuses.
  std::vector<v1::Lease> StartDraining();
  bool draining();
  std::vector<std::string> HeldIds();
  // Nothing queued, running or undelivered.
  bool Idle();

  // The results no stream took, to send first after a reconnect.
  std::vector<v1::WorkerMessage> TakeOutbox();
  void KeepInOutbox(v1::WorkerMessage message);
  size_t undelivered();

  // Ends the waits of TakeForSlot and TakeForBuild; queued leases are dropped (their leases
  // expire at the coordinator and run elsewhere).
  void Close();

 private:
  struct Pending {
    enum class Build { kNotStarted, kRunning, kDone };
    v1::Lease lease;
    Build build = Build::kNotStarted;
  };
  using Iterator = std::deque<Pending>::iterator;
  Iterator PickForSlot() ABSL_SHARED_LOCKS_REQUIRED(mu_);
  Iterator PickForBuild() ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const int slots_;
  absl::Mutex mu_;
  std::deque<Pending> queued_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> held_ ABSL_GUARDED_BY(mu_);  // queued or running lease ids
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<v1::WorkerMessage> outbox_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kforge

#endif  // KFORGE_GPU_WORKER_LEASE_QUEUE_H_
